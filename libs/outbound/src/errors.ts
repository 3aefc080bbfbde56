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
    return new OutboundRefusedError(
      OutboundRefusal.scheme,
      `refused the ${url.protocol} scheme${where}: only https and http are allowed`,
    );
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
    return new OutboundRefusedError(
      OutboundRefusal.address,
      `refused to connect to ${ip} (${label} address)${forHost}: ${why}`,
      {
        ip,
        kind,
      },
    );
  }

  static redirect(from: URL, to: URL): OutboundRefusedError {
    return new OutboundRefusedError(
      OutboundRefusal.redirect,
      `refused to follow a redirect from ${originOf(from)} to ${originOf(to)}: redirects are followed only within the same origin`,
    );
  }

  static redirectLimit(from: URL, limit: number): OutboundRefusedError {
    return new OutboundRefusedError(
      OutboundRefusal.redirectLimit,
      `refused to follow more than ${limit} redirects from ${originOf(from)}`,
    );
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

/**
 * Stable codes of {@link OutboundError}: what went wrong with an answer the policy let through.
 * - `response_too_large`: a body passed one of the bounds of {@link ResponseBound} (decompressed
 *   bytes), or declared a Content-Length above it.
 * - `deadline_exceeded`: the total deadline of a budgeted fetch (a discovery) ran out.
 */
export const OutboundErrorCode = {
  responseTooLarge: 'response_too_large',
  deadlineExceeded: 'deadline_exceeded',
} as const;
export type OutboundErrorCode = (typeof OutboundErrorCode)[keyof typeof OutboundErrorCode];

/**
 * The bound a response passed, named as the option that sets it:
 * - `maxBodyBytes`: one body that is not an event stream (JSON, an error page);
 * - `maxSseStreamBytes`: everything one event-stream response carries;
 * - `maxSseEventBytes`: one event of an event stream (its lines together, an unterminated line included);
 * - `maxSseEvents`: the number of events one event-stream response carries (a count, not bytes);
 * - `maxTotalBytes`: every body read through one budgeted fetch (one discovery);
 * - `deadlineMs`: the total time of one budgeted fetch.
 */
export const ResponseBound = {
  body: 'maxBodyBytes',
  sseStream: 'maxSseStreamBytes',
  sseEvent: 'maxSseEventBytes',
  sseEvents: 'maxSseEvents',
  total: 'maxTotalBytes',
  deadline: 'deadlineMs',
} as const;
export type ResponseBound = (typeof ResponseBound)[keyof typeof ResponseBound];

export interface OutboundErrorDetails {
  /** The bound that was hit and its size (bytes; events for `maxSseEvents`; milliseconds for `deadlineMs`). */
  bound: { name: ResponseBound; limit: number };
  /** Scheme, host and port of the server that answered: never a path, query or userinfo. */
  origin: string;
  /** The Content-Length the server declared, when that alone was refused. */
  declaredBytes?: number;
}

const BOUND_WHAT: Record<ResponseBound, string> = {
  maxBodyBytes: 'in one response body',
  maxSseStreamBytes: 'on one event stream',
  maxSseEventBytes: 'in one event of an event stream',
  maxSseEvents: 'events on one event stream',
  maxTotalBytes: 'over all the responses of this exchange',
  deadlineMs: '',
};

/** `8 MiB`, `512 KiB`, `1000 bytes`: the bound as an operator would write it. */
function sizeText(bytes: number): string {
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}

/**
 * A remote server's answer broke a bound of the connector (its data is untrusted): the body was
 * cut there and the upstream cancelled. A local error, never retryable (the same server answers
 * the same way). The message names the bound and the server's origin only.
 */
export class OutboundError extends Error {
  override readonly name = 'OutboundError';
  readonly retryable = false;

  constructor(
    readonly code: OutboundErrorCode,
    message: string,
    readonly details: OutboundErrorDetails,
  ) {
    super(message);
  }

  /** A body passed `bound` (counted in decompressed bytes, or events), or declared more than it. */
  static tooLarge(
    bound: Exclude<ResponseBound, 'deadlineMs'>,
    limit: number,
    url: URL,
    declaredBytes?: number,
  ): OutboundError {
    const origin = originOf(url);
    const events = bound === ResponseBound.sseEvents;
    const size = events ? String(limit) : sizeText(limit);
    const how =
      declaredBytes === undefined
        ? `more than ${size} ${BOUND_WHAT[bound]}`
        : `a declared Content-Length of ${declaredBytes} bytes, more than ${size} ${BOUND_WHAT[bound]}`;
    return new OutboundError(
      OutboundErrorCode.responseTooLarge,
      `response from ${origin} too large: ${how} (bound ${bound} = ${limit}${events ? '' : ' bytes'})`,
      {
        bound: { name: bound, limit },
        origin,
        ...(declaredBytes === undefined ? {} : { declaredBytes }),
      },
    );
  }

  /** The total deadline of a budgeted fetch ran out while a request or its body was under way. */
  static deadline(limitMs: number, url: URL): OutboundError {
    const origin = originOf(url);
    return new OutboundError(
      OutboundErrorCode.deadlineExceeded,
      `exchange with ${origin} passed its total deadline of ${limitMs} ms (bound deadlineMs)`,
      {
        bound: { name: ResponseBound.deadline, limit: limitMs },
        origin,
      },
    );
  }
}

/** The {@link OutboundError} in `err` or its `cause` chain (the MCP client wraps transport errors). */
export function findOutboundError(err: unknown): OutboundError | undefined {
  let current = err;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    if (current instanceof OutboundError) return current;
    current = current.cause;
  }
  return undefined;
}
