import type { AddressKind } from './address.js';

/** Stable code of every {@link OutboundRefusedError}, for logs and for errors that cross the wire. */
export const OUTBOUND_REFUSED = 'outbound_refused';

/** Why a request was refused. Enum as const object plus derived type. */
export const OutboundRefusal = {
  /** Not http or https (`file:`, `ftp:`, `data:` …). */
  scheme: 'scheme',
  /** Plain http under the production profile to a host not in `allowHttpHosts`. */
  plainHttp: 'plain_http',
  /** The host resolved to (or is) an address the policy does not allow. */
  address: 'address',
  /** A redirect to another origin, or one that adds userinfo. */
  redirect: 'redirect',
  /** More than the allowed number of redirects. */
  redirectLimit: 'redirect_limit',
} as const;
export type OutboundRefusal = (typeof OutboundRefusal)[keyof typeof OutboundRefusal];

const KIND_LABELS: Record<AddressKind, string> = {
  public: 'public',
  private: 'private',
  loopback: 'loopback',
  link_local: 'link-local',
  cgnat: 'carrier-grade NAT',
  metadata: 'cloud metadata',
  unspecified: 'unspecified',
  multicast: 'multicast',
  reserved: 'reserved',
};

/** Scheme, host and port only: never userinfo, path or query. */
function originOf(url: URL): string {
  return `${url.protocol}//${url.host}`;
}

/**
 * The outbound policy refused a request; no socket was opened to the refused address. A local
 * error, never retryable: the same policy refuses again. Messages name hosts, origins and
 * addresses only, never a path, query string or userinfo.
 */
export class OutboundRefusedError extends Error {
  override readonly name = 'OutboundRefusedError';
  readonly code = OUTBOUND_REFUSED;

  constructor(
    readonly reason: OutboundRefusal,
    message: string,
    /** The refused address and its kind, for `reason: 'address'`. */
    readonly address?: { ip: string; kind: AddressKind },
  ) {
    super(message);
  }

  static scheme(url: URL): OutboundRefusedError {
    const where = url.host === '' ? '' : ` for ${url.host}`;
    return new OutboundRefusedError(OutboundRefusal.scheme, `refused the ${url.protocol} scheme${where}: only https and http are allowed`);
  }

  static plainHttp(url: URL): OutboundRefusedError {
    return new OutboundRefusedError(
      OutboundRefusal.plainHttp,
      `refused plain http to ${url.host}: use https, or the operator may allow this host in allowHttpHosts`,
    );
  }

  static address(ip: string, kind: AddressKind, hostname: string): OutboundRefusedError {
    const label = KIND_LABELS[kind];
    const forHost = hostname === ip || hostname === `[${ip}]` ? '' : ` for ${hostname}`;
    const why =
      kind === 'metadata'
        ? 'cloud metadata addresses are refused unless allowPrivate lists this address or host'
        : `the operator has not allowed ${label} addresses`;
    return new OutboundRefusedError(OutboundRefusal.address, `refused to connect to ${ip} (${label} address)${forHost}: ${why}`, {
      ip,
      kind,
    });
  }

  static redirect(from: URL, to: URL): OutboundRefusedError {
    return new OutboundRefusedError(
      OutboundRefusal.redirect,
      `refused to follow a redirect from ${originOf(from)} to ${originOf(to)}: redirects are followed only within the same origin`,
    );
  }

  static redirectLimit(from: URL, limit: number): OutboundRefusedError {
    return new OutboundRefusedError(OutboundRefusal.redirectLimit, `refused to follow more than ${limit} redirects from ${originOf(from)}`);
  }
}

/** The {@link OutboundRefusedError} in `err` or its `cause` chain (fetch wraps socket errors). */
export function findRefusal(err: unknown): OutboundRefusedError | undefined {
  let current = err;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    if (current instanceof OutboundRefusedError) return current;
    current = current.cause;
  }
  return undefined;
}
