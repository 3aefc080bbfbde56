import type { IncomingMessage } from 'node:http';
import { BlockList, isIP } from 'node:net';

/**
 * The proxies in front of a service whose `X-Forwarded-For` is believed (`TRUSTED_PROXIES`:
 * addresses and CIDRs, comma separated; none by default). Only a request whose socket peer is one
 * of them has the header read, and only as far as a chain of them reaches: the client is the
 * rightmost address of the header that is not a trusted proxy. Whatever a client writes into the
 * header itself lies left of that and is never reached.
 *
 * In a library so that every public service (the registry's per-address limit, the endpoint's
 * failed-token limit) reads a client's address one way.
 */
export class TrustedProxies {
  private readonly list = new BlockList();
  readonly size: number;

  /** Throws naming `TRUSTED_PROXIES` and the entry for a malformed one. */
  constructor(entries: readonly string[]) {
    let n = 0;
    for (const raw of entries) {
      const entry = raw.trim();
      if (entry === '') continue;
      const [address = '', bits, ...rest] = entry.split('/');
      const family = isIP(address);
      const prefix = bits === undefined ? (family === 6 ? 128 : 32) : Number(bits);
      if (
        family === 0 ||
        rest.length > 0 ||
        !Number.isInteger(prefix) ||
        prefix < 0 ||
        prefix > (family === 6 ? 128 : 32) ||
        (bits !== undefined && !/^\d{1,3}$/.test(bits))
      ) {
        throw new Error(
          `TRUSTED_PROXIES: ${JSON.stringify(entry.slice(0, 64))} is not an address or a CIDR (e.g. 10.0.0.0/8, fd00::/8)`,
        );
      }
      this.list.addSubnet(address, prefix, family === 6 ? 'ipv6' : 'ipv4');
      n++;
    }
    this.size = n;
  }

  /** Parses `TRUSTED_PROXIES` (unset or empty: none). */
  static fromEnv(value: string | undefined): TrustedProxies {
    return new TrustedProxies((value ?? '').split(','));
  }

  /** Whether `address` (an IPv4-mapped IPv6 address counts as its IPv4 one) is a trusted proxy. */
  has(address: string): boolean {
    // None configured (the usual case): nothing to parse or look up (it was a BlockList check, a
    // SocketAddress made, on every request and every read of a body).
    if (this.size === 0) return false;
    const a = plain(address);
    const family = isIP(a);
    if (family === 0) return false;
    return this.list.check(a, family === 6 ? 'ipv6' : 'ipv4');
  }

  /** The client's address of a request: its socket peer, or what trusted proxies say it is. */
  clientAddress(req: IncomingMessage): string {
    const peer = plain(req.socket.remoteAddress ?? '');
    if (peer === '') return 'unknown';
    if (this.size === 0 || !this.has(peer)) return peer;
    const header = req.headers['x-forwarded-for'];
    const hops = (Array.isArray(header) ? header.join(',') : (header ?? ''))
      .split(',')
      .map((h) => h.trim())
      .filter((h) => h !== '');
    // Right to left: each trusted proxy appended the address it was reached from.
    let client = peer;
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = plain(hops[i] ?? '');
      // A hop that is no address ends the walk: the last address known is the client's.
      if (isIP(hop) === 0) break;
      client = hop;
      if (!this.has(hop)) break;
    }
    return client;
  }
}

/** An address without an IPv4-mapped prefix or brackets. */
function plain(address: string): string {
  const a = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  return a.toLowerCase().startsWith('::ffff:') && isIP(a.slice(7)) === 4 ? a.slice(7) : a;
}
