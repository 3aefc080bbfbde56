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
  /** Connecting to or talking with the remote server failed. */
  transportError: 'transport_error',
  /** The remote server wants authorization we do not have. */
  authRequired: 'auth_required',
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
   * `roots_unsupported` (roots are refused), `too_many_rounds`, `lost` (a legacy call's instance is gone).
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
  /** Outbound safety refused the address. */
  outboundRefused: 'outbound_refused',
  /**
   * The tool's server is pinned and the tool's changed or new contract waits for a person's
   * review (`ListToolChanges`): nothing was called. `details.server`, `details.tool` and
   * `details.cid` (the held contract) say which.
   */
  heldForReview: 'held_for_review',
  /** A fault of ours: never the client's. */
  internal: 'internal',
} as const;
export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

const KNOWN = new Set<string>(Object.values(ErrorCodes));

/** Codes worth retrying later without changing the request. */
const RETRYABLE = new Set<ErrorCode>([ErrorCodes.transportError, ErrorCodes.timeout, ErrorCodes.rateLimited, ErrorCodes.internal]);

export interface WireErrorShape {
  code: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
}

export class WireError extends Error {
  override readonly name = 'WireError';
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }

  get retryable(): boolean {
    // A quota that frees itself (a discovery or a stream in flight, a full proxy instance) says
    // when with retryAfterMs; one the owner must free (servers, agents) does not.
    return RETRYABLE.has(this.code) || (this.code === ErrorCodes.quotaExceeded && typeof this.details.retryAfterMs === 'number');
  }

  /** `details.retryAfterMs` when the error says how long to wait (rate limits, quotas in flight). */
  get retryAfterMs(): number | undefined {
    const v = this.details.retryAfterMs;
    return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined;
  }

  /** HTTP status for the action API. */
  get httpStatus(): number {
    switch (this.code) {
      case 'invalid_input':
      case 'invalid_arguments':
        return 400;
      case 'unauthenticated':
        return 401;
      case 'forbidden':
      case 'not_granted':
      case 'approval_refused':
      case 'input_refused':
      case 'outbound_refused':
        return 403;
      case 'not_found':
        return 404;
      case 'conflict':
      case 'approval_required':
      case 'input_required':
      case 'quota_exceeded':
      case 'held_for_review':
        return 409;
      case 'rate_limited':
        return 429;
      case 'timeout':
        return 504;
      case 'server_error':
      case 'transport_error':
      case 'call_lost':
      case 'maybe_executed':
      case 'auth_required':
      case 'cancelled':
        return 502;
      case 'internal':
        return 500;
    }
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
