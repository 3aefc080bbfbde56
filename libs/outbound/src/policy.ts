import { classifyParsed, parseAddress, parseRange, rangeContains } from './address.js';
import type { AddressKind, AddressRange } from './address.js';
import { OutboundRefusedError } from './errors.js';

/** What the operator allows outbound; the same shape as `@mcpx/config`'s `OutboundPolicy`. */
export interface OutboundPolicy {
  /** `local` allows plain http and every non-metadata address; `production` allows neither. */
  profile: 'local' | 'production';
  /** Hosts (name or address, optional `:port`) that may be reached over plain http. */
  allowHttpHosts: string[];
  /** Hostnames, addresses or CIDR ranges that may be reached although not public. */
  allowPrivate: string[];
}

interface CompiledPolicy {
  local: boolean;
  ranges: AddressRange[];
  hostnames: Set<string>;
  httpHosts: Set<string>;
}

const compiled = new WeakMap<OutboundPolicy, CompiledPolicy>();

/** Lower case, no brackets, no trailing dot: `[::1]` → `::1`, `Example.COM.` → `example.com`. */
function normalizeHost(host: string): string {
  let text = host.trim().toLowerCase();
  if (text.startsWith('[') && text.endsWith(']')) text = text.slice(1, -1);
  return text.endsWith('.') ? text.slice(0, -1) : text;
}

function compile(policy: OutboundPolicy): CompiledPolicy {
  const ranges: AddressRange[] = [];
  const hostnames = new Set<string>();
  for (const entry of policy.allowPrivate) {
    const range = parseRange(entry.trim());
    if (range !== undefined) ranges.push(range);
    else if (entry.includes('/') || normalizeHost(entry) === '')
      throw new TypeError(`allowPrivate has an invalid entry: ${entry}`);
    else hostnames.add(normalizeHost(entry));
  }
  const httpHosts = new Set(policy.allowHttpHosts.map((h) => h.trim().toLowerCase()).filter((h) => h !== ''));
  return { local: policy.profile === 'local', ranges, hostnames, httpHosts };
}

/** The policy in matchable form, parsed once per policy object; throws on a malformed CIDR. */
function compiledPolicy(policy: OutboundPolicy): CompiledPolicy {
  let c = compiled.get(policy);
  if (c === undefined) {
    c = compile(policy);
    compiled.set(policy, c);
  }
  return c;
}

/** Checks `allowPrivate` up front, so a malformed entry fails at wiring time, not on first use. */
export function validatePolicy(policy: OutboundPolicy): void {
  compiledPolicy(policy);
}

/**
 * The address's kind, and whether the policy lets a connection reach it. Public addresses are
 * always allowed. Others are allowed when `allowPrivate` lists `hostname` (the URL's hostname,
 * before resolution) or a range holding the address, or when the profile is `local`. Metadata
 * addresses need the exact address (`169.254.169.254` or `/32`) or the hostname listed, even
 * under `local`: a wide range such as `169.254.0.0/16` does not unlock them.
 */
export function checkAddress(
  ip: string,
  policy: OutboundPolicy,
  hostname?: string,
): { kind: AddressKind; allowed: boolean } {
  const address = parseAddress(ip);
  if (address === undefined) throw new TypeError('not an IP address');
  const kind = classifyParsed(address);
  if (kind === 'public') return { kind, allowed: true };
  const c = compiledPolicy(policy);
  if (hostname !== undefined && c.hostnames.has(normalizeHost(hostname))) return { kind, allowed: true };
  const full = address.family === 4 ? 32 : 128;
  const listed = c.ranges.some((r) => rangeContains(r, address) && (kind !== 'metadata' || r.bits === full));
  return { kind, allowed: listed || (c.local && kind !== 'metadata') };
}

/** Whether the policy allows connecting to `ip` (see {@link checkAddress}). */
export function isAllowedAddress(ip: string, policy: OutboundPolicy, hostname?: string): boolean {
  return checkAddress(ip, policy, hostname).allowed;
}

/** Throws {@link OutboundRefusedError} unless the policy allows connecting to `ip` for `hostname`. */
export function assertAllowedAddress(ip: string, policy: OutboundPolicy, hostname: string): void {
  const { kind, allowed } = checkAddress(ip, policy, hostname);
  if (!allowed)
    throw OutboundRefusedError.address(
      parseAddress(ip)?.family === 6 ? ip.replace(/^\[|\]$/g, '') : ip,
      kind,
      hostname,
    );
}

/**
 * Whether plain http may reach the URL's host: always under `local`, otherwise when
 * `allowHttpHosts` lists the hostname (any port) or `hostname:port` (80 when the URL has none).
 */
export function isAllowedHttpHost(url: URL, policy: OutboundPolicy): boolean {
  const c = compiledPolicy(policy);
  if (c.local) return true;
  const hostname = url.hostname.toLowerCase().replace(/\.$/, '');
  const port = url.port === '' ? '80' : url.port;
  const candidates = [hostname, `${hostname}:${port}`];
  if (hostname.startsWith('[')) candidates.push(normalizeHost(hostname));
  return candidates.some((h) => c.httpHosts.has(h));
}
