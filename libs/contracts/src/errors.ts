/**
 * Errors that cross the wire (NATS replies, HTTP bodies). Each has a stable string `code`;
 * `WireError.from` rebuilds the typed error on the receiving side. Messages never carry secrets.
 */
export const ErrorCodes = {
  /** A field of the input is malformed or out of bounds; `details.field` names it. */
  invalidInput: 'invalid_input',
  /** The envelope's signature, signer, timestamp or nonce was refused. */
  unauthenticated: 'unauthenticated',
  /** The signer may not do this. */
  forbidden: 'forbidden',
  notFound: 'not_found',
  conflict: 'conflict',
  /** The agent's definition does not grant the tool's server. */
  notGranted: 'not_granted',
  /** The arguments do not match the tool's contract; `details.contract` carries it. */
  invalidArguments: 'invalid_arguments',
  /** The remote server answered the call with `isError: true`. */
  serverError: 'server_error',
  /**
   * The call never reached the remote server, or the server refused it before running it
   * (connect failed, connection refused, an HTTP 4xx to the request, no proxy running): nothing
   * ran, so it may be retried as is. A failure after the request went out is `maybe_executed`.
   */
  transportError: 'transport_error',
  /** The remote server wants authorization we do not have. */
  authRequired: 'auth_required',
  /** The request went out and no answer came in time: it may have run (never retried on its own). */
  timeout: 'timeout',
  /**
   * The proxy instance running the call went away before it answered: the call may or may not have
   * reached the server, so nothing retries it on its own (the caller decides).
   */
  callLost: 'call_lost',
  /**
   * The request reached the remote server and the answer was lost on the way back (a modern
   * server's response stream broke: the 2026-07-28 revision has no resumption): the call may have
   * run, so nothing retries it on its own (the caller decides).
   */
  maybeExecuted: 'maybe_executed',
  cancelled: 'cancelled',
  /** An `always_ask` tool stopped for a human; `details.approvalId` names the request to decide. */
  approvalRequired: 'approval_required',
  /**
   * The approval a call carried cannot be used; `details.reason`: `unknown`, `expired`, `denied`,
   * `used` (a replay), `mismatch` (another run, tool or arguments) or `pending` (not decided yet).
   */
  approvalRefused: 'approval_refused',
  /**
   * The server asked for input in the middle of the call (2026-07-28 `input_required`, or a
   * legacy server's `elicitation/create`): `details.inputRequestId` names the input request,
   * `details.requests` what is asked (message, schema or URL; never the server's `requestState`).
   * Once answered, re-send the same call with `inputRequestId`.
   */
  inputRequired: 'input_required',
  /**
   * An input request cannot be used or cannot be answered here; `details.reason`: `unknown`,
   * `expired`, `used` (a replay), `mismatch` (another agent, run, tool or arguments), `tampered`
   * (its sealed state does not open), `sampling_unsupported` (the runtime does not sample),
   * `roots_unsupported` (roots are refused), `too_many_rounds`, `state_too_large` (the server's
   * `requestState` is over `INPUT_LIMITS.requestStateBytes`), `lost` (a legacy call's instance is gone),
   * `unanswerable` (a relayed prompt's or resource's question its client did not declare it answers).
   */
  inputRefused: 'input_refused',
  /**
   * Too many requests for now (actions per signer or per client address, calls per server, runs
   * of a full proxy instance): the same request may succeed later. `details.retryAfterMs` says
   * when (HTTP 429 with `Retry-After`), `details.limit` names the limit.
   */
  rateLimited: 'rate_limited',
  /**
   * A count the account (or agent) holds is at its limit (servers, agents, pending approvals,
   * event streams, discoveries in flight): nothing was written. `details.field` names the
   * offending field, `details.limit` the limit and `details.max` its value; `details.retryAfterMs`
   * is there only where waiting helps (something in flight ends on its own). HTTP 409: the request
   * conflicts with the account's current state (it succeeds once something is deleted or ends),
   * not with the signer's rights (403 would tell a client to stop asking for good).
   */
  quotaExceeded: 'quota_exceeded',
  /**
   * The connector's outbound policy refused the server's address (a private or loopback address,
   * plain http, a redirect elsewhere): no socket was opened, nothing ran. `details.reason` is the
   * policy's reason (`address`, `scheme`, `plain_http`, `redirect`, `redirect_limit`), `details.kind`
   * the refused address's kind.
   */
  outboundRefused: 'outbound_refused',
  /**
   * The tool's server is pinned and the tool's changed or new contract waits for a person's
   * review (`ListToolChanges`): nothing was called. `details.server`, `details.tool` and
   * `details.cid` (the held contract) say which.
   */
  heldForReview: 'held_for_review',
  /**
   * A store the request needs is out of reach for now (Redis, Postgres): nothing ran and nothing
   * was written, and it is said at once (within about a second) instead of after the client's
   * retries. `details.dependency` names the store (`redis`, `postgres`; never its address),
   * `details.retryAfterMs` when to try again (HTTP 503 with `Retry-After`).
   */
  unavailable: 'unavailable',
  /** A fault of ours: never the client's. */
  internal: 'internal',
} as const;
export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

const KNOWN = new Set<string>(Object.values(ErrorCodes));

/**
 * What an error says about the request it answers, one row per code (the single place the
 * retry rules live):
 * - `ran`: `none`: nothing ran on a remote server and nothing was written (the same request may
 *   be sent again without a double effect); `maybe`: the call may have run on the remote server
 *   and its answer is lost or unknown (nothing retries it on its own: the caller decides);
 *   `ran`: the remote server ran it and answered with the error.
 * - `retry`: `yes`: the same request may succeed if sent again as it is; `after`: only when the
 *   error says when (`details.retryAfterMs`); `no`: it fails again unchanged, or it may have run.
 * - `status`: the HTTP status of the action API.
 * A `maybe` code is never retryable: that is what keeps a call from running twice.
 */
export interface ErrorTraits {
  readonly status: number;
  readonly ran: 'none' | 'maybe' | 'ran';
  readonly retry: 'yes' | 'after' | 'no';
}

export const ERROR_TRAITS: { readonly [C in ErrorCode]: ErrorTraits } = {
  invalid_input: { status: 400, ran: 'none', retry: 'no' },
  unauthenticated: { status: 401, ran: 'none', retry: 'no' },
  forbidden: { status: 403, ran: 'none', retry: 'no' },
  not_found: { status: 404, ran: 'none', retry: 'no' },
  conflict: { status: 409, ran: 'none', retry: 'no' },
  not_granted: { status: 403, ran: 'none', retry: 'no' },
  invalid_arguments: { status: 400, ran: 'none', retry: 'no' },
  server_error: { status: 502, ran: 'ran', retry: 'no' },
  // Only ever produced when the request did not reach the server, or the server refused it unrun.
  transport_error: { status: 502, ran: 'none', retry: 'yes' },
  auth_required: { status: 502, ran: 'none', retry: 'no' },
  // The request went out and no answer came in time: it may have run.
  timeout: { status: 504, ran: 'maybe', retry: 'no' },
  call_lost: { status: 502, ran: 'maybe', retry: 'no' },
  maybe_executed: { status: 502, ran: 'maybe', retry: 'no' },
  cancelled: { status: 502, ran: 'maybe', retry: 'no' },
  approval_required: { status: 409, ran: 'none', retry: 'no' },
  approval_refused: { status: 403, ran: 'none', retry: 'no' },
  input_required: { status: 409, ran: 'none', retry: 'no' },
  input_refused: { status: 403, ran: 'none', retry: 'no' },
  rate_limited: { status: 429, ran: 'none', retry: 'yes' },
  // A quota that frees itself (a discovery or a stream in flight, a full proxy instance) says
  // when with retryAfterMs; one the owner must free (servers, agents) does not.
  quota_exceeded: { status: 409, ran: 'none', retry: 'after' },
  outbound_refused: { status: 403, ran: 'none', retry: 'no' },
  held_for_review: { status: 409, ran: 'none', retry: 'no' },
  // Refused before the store was reached (or rolled back with it): retried after retryAfterMs.
  unavailable: { status: 503, ran: 'none', retry: 'after' },
  // An action is one transaction (rolled back on a fault); a call that may have run is never
  // answered `internal` (the proxy and its client say `maybe_executed`).
  internal: { status: 500, ran: 'none', retry: 'yes' },
};

/** Keys any error's details may carry besides its own. */
type Open = { readonly [key: string]: unknown };

/** The `details` of each code (every key optional unless always set; extra keys allowed). */
export interface ErrorDetailsMap {
  invalid_input: Open & { field?: string; rule?: unknown; bound?: number; offset?: number };
  unauthenticated: Open & { reason?: string };
  forbidden: Open & { field?: string; grant?: string };
  not_found: Open & { field?: string };
  conflict: Open & { field?: string };
  not_granted: Open & { server?: string; tool?: string };
  invalid_arguments: Open & { contract?: unknown; field?: string };
  server_error: Open & { server?: string; tool?: string; mcpCode?: number };
  transport_error: Open & { server?: string; vendor?: string };
  auth_required: Open & { server?: string; wwwAuthenticate?: string };
  timeout: Open;
  call_lost: Open & { callId?: string };
  maybe_executed: Open & { server?: string; tool?: string; field?: string; rule?: unknown };
  cancelled: Open;
  approval_required: Open & { approvalId?: string; run?: string };
  approval_refused: Open & { reason?: 'unknown' | 'expired' | 'denied' | 'used' | 'mismatch' | 'pending' };
  input_required: Open & { inputRequestId?: string; requests?: unknown; run?: string };
  input_refused: Open & { reason?: string; tool?: string; server?: string };
  rate_limited: Open & { retryAfterMs?: number; limit?: string; max?: number; server?: string; reason?: string };
  quota_exceeded: Open & { field?: string; limit?: string; max?: number; retryAfterMs?: number };
  outbound_refused: Open & { reason?: string; server?: string; kind?: string };
  held_for_review: Open & { server?: string; tool?: string; cid?: string };
  unavailable: Open & { dependency?: 'redis' | 'postgres'; retryAfterMs?: number };
  internal: Open & { field?: string; rule?: unknown };
}

/** `details` of a code (of any code: any of them). */
export type ErrorDetails<C extends ErrorCode = ErrorCode> = ErrorDetailsMap[C];

export interface WireErrorShape {
  code: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
}

export class WireError<C extends ErrorCode = ErrorCode> extends Error {
  override readonly name = 'WireError';
  constructor(
    readonly code: C,
    message: string,
    readonly details: ErrorDetails<C> = {},
  ) {
    super(message);
  }

  /** Narrows to one code, so its details are typed. */
  is<K extends ErrorCode>(code: K): this is WireError<K> {
    const mine: ErrorCode = this.code;
    return mine === code;
  }

  get traits(): ErrorTraits {
    return ERROR_TRAITS[this.code];
  }

  /** Whether the same request may be sent again as it is (never when it may have run). */
  get retryable(): boolean {
    const { retry } = this.traits;
    return retry === 'yes' || (retry === 'after' && this.retryAfterMs !== undefined);
  }

  /** True when the call may have run on the remote server: nothing may send it again on its own. */
  get mayHaveRun(): boolean {
    return this.traits.ran === 'maybe';
  }

  /** `details.retryAfterMs` when the error says how long to wait (rate limits, quotas in flight). */
  get retryAfterMs(): number | undefined {
    const v = this.details.retryAfterMs;
    return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined;
  }

  /** HTTP status for the action API. */
  get httpStatus(): number {
    return this.traits.status;
  }

  toJSON(): WireErrorShape {
    return Object.keys(this.details).length > 0
      ? { code: this.code, message: this.message, details: this.details }
      : { code: this.code, message: this.message };
  }

  /** Rebuilds a typed error from a wire shape; an unknown code becomes `internal`. */
  static from(shape: unknown): WireError {
    if (shape !== null && typeof shape === 'object') {
      const s = shape as Partial<WireErrorShape>;
      const code = typeof s.code === 'string' && KNOWN.has(s.code) ? s.code : ErrorCodes.internal;
      const message = typeof s.message === 'string' ? s.message : 'unknown error';
      const details = s.details !== null && typeof s.details === 'object' ? s.details : {};
      return new WireError(code, message, details);
    }
    return new WireError(ErrorCodes.internal, 'malformed error');
  }
}

/** An invalid-input error naming the offending field. */
export function invalidInput(field: string, message: string, extra: Record<string, unknown> = {}): WireError {
  return new WireError(ErrorCodes.invalidInput, `${field}: ${message}`, { field, ...extra });
}

/** Turns anything thrown into a wire error without leaking internals of a non-wire error. */
export function toWireError(err: unknown): WireError {
  if (err instanceof WireError) return err;
  return new WireError(ErrorCodes.internal, 'internal error');
}
