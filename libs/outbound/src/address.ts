import { isIP } from 'node:net';

/** What an IP address reaches, for the outbound policy. Enum as const object plus derived type. */
export const AddressKind = {
  public: 'public',
  private: 'private',
  loopback: 'loopback',
  linkLocal: 'link_local',
  cgnat: 'cgnat',
  /** Cloud instance metadata / credential endpoints: refused unless listed one by one. */
  metadata: 'metadata',
  unspecified: 'unspecified',
  multicast: 'multicast',
  /** Documentation, benchmarking, protocol-assignment, future-use and unallocated ranges. */
  reserved: 'reserved',
} as const;
export type AddressKind = (typeof AddressKind)[keyof typeof AddressKind];

/** A parsed address: 4 bytes for IPv4, 16 for IPv6 (zone id dropped). */
export interface ParsedAddress {
  family: 4 | 6;
  bytes: Uint8Array;
}

/** A CIDR range; `bits` is the prefix length. */
export interface AddressRange extends ParsedAddress {
  bits: number;
}

/** Strips `[…]` and an IPv6 zone id (`fe80::1%eth0`). */
function bare(ip: string): string {
  let text = ip.trim();
  if (text.startsWith('[') && text.endsWith(']')) text = text.slice(1, -1);
  const zone = text.indexOf('%');
  return zone === -1 ? text : text.slice(0, zone);
}

function ipv4Bytes(text: string): Uint8Array {
  return Uint8Array.from(text.split('.').map(Number));
}

function ipv6Bytes(text: string): Uint8Array {
  let hex = text;
  // A dotted-quad tail (`::ffff:10.0.0.1`) becomes two hex groups.
  const lastColon = hex.lastIndexOf(':');
  if (hex.includes('.', lastColon)) {
    const [a = 0, b = 0, c = 0, d = 0] = ipv4Bytes(hex.slice(lastColon + 1));
    hex = `${hex.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = hex.split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':');
  const zeros = tail === undefined ? 0 : 8 - headGroups.length - tailGroups.length;
  const groups = [...headGroups, ...Array<string>(zeros).fill('0'), ...tailGroups].map((g) => parseInt(g, 16));
  const bytes = new Uint8Array(16);
  groups.forEach((g, i) => {
    bytes[i * 2] = g >> 8;
    bytes[i * 2 + 1] = g & 0xff;
  });
  return bytes;
}

/** Parses an IPv4 or IPv6 address (brackets and zone id allowed); undefined when it is not one. */
export function parseAddress(ip: string): ParsedAddress | undefined {
  const text = bare(ip);
  switch (isIP(text)) {
    case 4:
      return { family: 4, bytes: ipv4Bytes(text) };
    case 6:
      return { family: 6, bytes: ipv6Bytes(text) };
    default:
      return undefined;
  }
}

/** Parses `10.0.0.0/8`, `fc00::/7` or a plain address (a full-length range). */
export function parseRange(text: string): AddressRange | undefined {
  const slash = text.indexOf('/');
  const address = parseAddress(slash === -1 ? text : text.slice(0, slash));
  if (address === undefined) return undefined;
  const max = address.family === 4 ? 32 : 128;
  if (slash === -1) return { ...address, bits: max };
  const bitsText = text.slice(slash + 1);
  const bits = Number(bitsText);
  if (!/^\d{1,3}$/.test(bitsText) || bits > max) return undefined;
  return { ...address, bits };
}

function prefixMatches(range: AddressRange, bytes: Uint8Array): boolean {
  let remaining = range.bits;
  for (let i = 0; remaining > 0; i++, remaining -= 8) {
    const mask = remaining >= 8 ? 0xff : (0xff << (8 - remaining)) & 0xff;
    if (((range.bytes[i] ?? 0) & mask) !== ((bytes[i] ?? 0) & mask)) return false;
  }
  return true;
}

/** The IPv4 address inside an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`), if it is one. */
function mappedIpv4(address: ParsedAddress): Uint8Array | undefined {
  if (address.family !== 6) return undefined;
  const b = address.bytes;
  for (let i = 0; i < 10; i++) if (b[i] !== 0) return undefined;
  return b[10] === 0xff && b[11] === 0xff ? b.slice(12) : undefined;
}

/** Whether `range` contains `address`; an IPv4-mapped IPv6 address also matches IPv4 ranges. */
export function rangeContains(range: AddressRange, address: ParsedAddress): boolean {
  if (range.family === address.family) return prefixMatches(range, address.bytes);
  const mapped = range.family === 4 ? mappedIpv4(address) : undefined;
  return mapped !== undefined && prefixMatches(range, mapped);
}

type Rule = readonly [range: AddressRange, kind: AddressKind | 'embedded_ipv4'];

function rules(table: ReadonlyArray<readonly [string, AddressKind | 'embedded_ipv4']>): Rule[] {
  return table.map(([cidr, kind]) => {
    const range = parseRange(cidr);
    if (range === undefined) throw new Error(`bad built-in range ${cidr}`);
    return [range, kind] as const;
  });
}

// First match wins, so single addresses come before the ranges that hold them.
const IPV4_RULES = rules([
  ['169.254.169.254/32', 'metadata'], // AWS, GCP, Azure, OCI, DigitalOcean… instance metadata
  ['169.254.170.2/32', 'metadata'], // AWS ECS task credentials
  ['169.254.170.23/32', 'metadata'], // AWS EKS pod identity agent
  ['100.100.100.200/32', 'metadata'], // Alibaba Cloud metadata
  ['168.63.129.16/32', 'metadata'], // Azure WireServer (a public-range address only meaningful inside Azure)
  ['0.0.0.0/32', 'unspecified'],
  ['0.0.0.0/8', 'reserved'],
  ['10.0.0.0/8', 'private'],
  ['100.64.0.0/10', 'cgnat'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link_local'],
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'reserved'], // IETF protocol assignments
  ['192.0.2.0/24', 'reserved'], // TEST-NET-1
  ['192.88.99.0/24', 'reserved'], // 6to4 relay anycast (deprecated)
  ['192.168.0.0/16', 'private'],
  ['198.18.0.0/15', 'reserved'], // benchmarking
  ['198.51.100.0/24', 'reserved'], // TEST-NET-2
  ['203.0.113.0/24', 'reserved'], // TEST-NET-3
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved'], // future use, incl. 255.255.255.255
]);

const IPV6_RULES = rules([
  ['fd00:ec2::254/128', 'metadata'], // AWS instance metadata over IPv6
  ['fd00:ec2::23/128', 'metadata'], // AWS EKS pod identity agent over IPv6
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['::ffff:0:0/96', 'embedded_ipv4'], // IPv4-mapped
  ['64:ff9b::/96', 'embedded_ipv4'], // NAT64 well-known prefix: reaches the embedded IPv4 address
  ['64:ff9b:1::/48', 'private'], // NAT64 local use
  ['::/8', 'reserved'], // incl. deprecated IPv4-compatible ::a.b.c.d
  ['100::/64', 'reserved'], // discard-only
  ['2001:db8::/32', 'reserved'], // documentation
  ['2001::/23', 'reserved'], // IETF protocol assignments (Teredo, ORCHID, …)
  ['2002::/16', 'embedded_ipv4'], // 6to4: reaches the embedded IPv4 address
  ['3fff::/20', 'reserved'], // documentation
  ['2000::/3', 'public'],
  ['fc00::/7', 'private'], // unique local
  ['fe80::/10', 'link_local'],
  ['fec0::/10', 'private'], // deprecated site-local
  ['ff00::/8', 'multicast'],
]);

function classifyIpv4(address: ParsedAddress): AddressKind {
  for (const [range, kind] of IPV4_RULES) {
    if (prefixMatches(range, address.bytes)) return kind === 'embedded_ipv4' ? 'reserved' : kind;
  }
  return 'public';
}

function embeddedIpv4(range: AddressRange, bytes: Uint8Array): ParsedAddress {
  // 6to4 (2002::/16) carries the address right after the prefix; the /96 prefixes at the end.
  const start = range.bits === 16 ? 2 : 12;
  return { family: 4, bytes: bytes.slice(start, start + 4) };
}

function classifyIpv6(address: ParsedAddress): AddressKind {
  for (const [range, kind] of IPV6_RULES) {
    if (!prefixMatches(range, address.bytes)) continue;
    return kind === 'embedded_ipv4' ? classifyIpv4(embeddedIpv4(range, address.bytes)) : kind;
  }
  // Outside 2000::/3 nothing is allocated for global unicast.
  return 'reserved';
}

/**
 * What an IPv4 or IPv6 address reaches. IPv4-mapped (`::ffff:10.0.0.1`), NAT64 (`64:ff9b::/96`)
 * and 6to4 (`2002::/16`) addresses are classified by the IPv4 address they carry. Pure; throws a
 * TypeError when `ip` is not an address.
 */
export function classifyAddress(ip: string): AddressKind {
  const address = parseAddress(ip);
  if (address === undefined) throw new TypeError('not an IP address');
  return classifyParsed(address);
}

/** {@link classifyAddress} of an already parsed address. */
export function classifyParsed(address: ParsedAddress): AddressKind {
  return address.family === 4 ? classifyIpv4(address) : classifyIpv6(address);
}
