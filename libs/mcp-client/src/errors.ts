import { redactErrorChain, redactSecrets, type SecretScrubber } from './scrub.js';
import {
  ProtocolError,
  SdkError,
  SdkErrorCode,
  SdkHttpError,
  SseError,
  UnauthorizedError,
} from '@modelcontextprotocol/client';

/**
 * Stable codes of {@link McpClientError}.
 * - `connect_failed`: the handshake did not complete (HTTP status or network cause in the message).
 * - `unauthorized`: the server answered 401 (`details.wwwAuthenticate` when it sent one).
 * - `session_expired`: a legacy server no longer knows the session (404 as the 2025 spec says, or
 *   400 "No valid session ID" as SDK v1 servers answer); the request was not executed, so one
 *   retry on a fresh connection is safe.
 * - `timeout`: the request (or the connect) ran out of time.
 * - `cancelled`: the caller's signal aborted.
 * - `protocol_error`: the server answered with a JSON-RPC error (`mcpCode` keeps its code).
 * - `transport_error`: anything else (network failure mid-call, connection closed, bad response).
 * - `era_negotiation_failed`: no protocol era could be agreed: the server's `server/discover`
 *   answer is garbage, mixes eras or lies about its versions, or a cached verdict no longer holds
 *   (the message says which).
 * - `maybe_executed`: a modern-era call whose response stream broke after the request was sent:
 *   the server may have run it. Never retryable (2026-07-28 removed stream resumption).
 */
export const McpClientErrorCode = {
  ConnectFailed: 'connect_failed',
  Unauthorized: 'unauthorized',
  SessionExpired: 'session_expired',
  Timeout: 'timeout',
  Cancelled: 'cancelled',
  ProtocolError: 'protocol_error',
  TransportError: 'transport_error',
  EraNegotiationFailed: 'era_negotiation_failed',
  MaybeExecuted: 'maybe_executed',
} as const;
export type McpClientErrorCode = (typeof McpClientErrorCode)[keyof typeof McpClientErrorCode];

/**
 * What a failed request may have run on the server:
 * - `none`: provably nothing: it was never sent, no byte of it reached the server (the connect
 *   was refused, the name did not resolve), or the server refused it before running it (an HTTP
 *   status of {@link REFUSED_UNRUN}, a 401, a lost legacy session, a refused protocol version);
 * - `maybe`: it went out and its answer is lost, broken, late or cancelled: it may have run, so
 *   nothing sends it again on its own.
 */
export const McpClientRan = {
  None: 'none',
  Maybe: 'maybe',
} as const;
export type McpClientRan = (typeof McpClientRan)[keyof typeof McpClientRan];

export interface McpClientErrorDetails {
  /** HTTP status of the failing response, when there was one. */
  status?: number;
  /** JSON-RPC error code, for `protocol_error` (and timeouts). */
  mcpCode?: number;
  /** Value of the `WWW-Authenticate` response header (a server's header, not ours). */
  wwwAuthenticate?: string;
  /** The transport attempted when the error happened. */
  transport?: 'http' | 'sse';
  /** Message of the SSE fallback's failure when both transports failed (the first error is thrown). */
  fallbackError?: string;
  /** The socket or TLS error code of a network failure (`ECONNREFUSED`, `ERR_SSL_WRONG_VERSION_NUMBER`). */
  socketCode?: string;
  /** What the failed request may have run; unset: {@link defaultRan} of the code. */
  ran?: McpClientRan;
}

/**
 * What an error of a code says ran when the place that threw it does not say: a timed-out,
 * cancelled or broken call may have run; the other codes are thrown before a request goes out,
 * or answer one the server refused. The call path sets `ran` on every error it throws.
 */
function defaultRan(code: McpClientErrorCode): McpClientRan {
  return code === McpClientErrorCode.MaybeExecuted ||
    code === McpClientErrorCode.Timeout ||
    code === McpClientErrorCode.Cancelled
    ? McpClientRan.Maybe
    : McpClientRan.None;
}

/**
 * A local error of the MCP client. The message never contains request header values or the
 * URL's userinfo/query: it is safe to log and to show to the account owner.
 */
export class McpClientError extends Error {
  override readonly name = 'McpClientError';
  readonly code: McpClientErrorCode;
  /** True only for `session_expired`: the request was not executed and may be retried once. */
  readonly retryable: boolean;
  readonly status: number | undefined;
  readonly mcpCode: number | undefined;
  readonly wwwAuthenticate: string | undefined;
  /** What the failed request may have run on the server (see {@link McpClientRan}). */
  readonly ran: McpClientRan;
  readonly details: McpClientErrorDetails;

  constructor(
    code: McpClientErrorCode,
    message: string,
    details: McpClientErrorDetails = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.code = code;
    this.retryable = code === McpClientErrorCode.SessionExpired;
    this.ran = details.ran ?? defaultRan(code);
    this.details = details;
    this.status = details.status;
    this.mcpCode = details.mcpCode;
    this.wwwAuthenticate = details.wwwAuthenticate;
  }

  /** The same error, saying `ran` (itself when it already does). */
  withRan(ran: McpClientRan): McpClientError {
    if (ran === this.ran) return this;
    const copy = new McpClientError(
      this.code,
      this.message,
      { ...this.details, ran },
      this.cause === undefined ? undefined : { cause: this.cause },
    );
    if (this.stack !== undefined) copy.stack = this.stack;
    return copy;
  }
}

/** `url` without userinfo, query and fragment: safe to put in a message. */
export function redactUrl(url: string | URL): string {
  try {
    const copy = new URL(url);
    copy.username = '';
    copy.password = '';
    copy.search = '';
    copy.hash = '';
    return copy.href;
  } catch {
    return '<invalid url>';
  }
}

const MAX_DETAIL_CHARS = 300;

/**
 * Replaces every form of every secret (see `./scrub.ts`: bare token, base64, URL-encoded, any
 * case) with `[redacted]` and bounds the text.
 */
export function scrub(text: string, secrets: readonly string[] | SecretScrubber = []): string {
  const out = redactSecrets(text, secrets);
  return out.length > MAX_DETAIL_CHARS ? `${out.slice(0, MAX_DETAIL_CHARS)}…` : out;
}

/**
 * The text of a network failure, preserving the socket error: `fetch failed` becomes
 * `connect ECONNREFUSED 127.0.0.1:45678` when that is its cause.
 */
export function networkCause(err: unknown): string | undefined {
  let current: unknown = err;
  for (let depth = 0; depth < 5 && current instanceof Error; depth += 1) {
    const cause: unknown = current.cause;
    if (!(cause instanceof Error)) break;
    current = cause;
  }
  if (!(current instanceof Error) || current === err) {
    return err instanceof Error && isFetchFailure(err) ? err.message : undefined;
  }
  if (current.message) return current.message;
  // Happy-eyeballs failures are an AggregateError with an empty message.
  if (current instanceof AggregateError) {
    const first: unknown = current.errors[0];
    if (first instanceof Error && first.message) return first.message;
  }
  const code = (current as { code?: unknown }).code;
  return typeof code === 'string' ? code : current.name;
}

function isFetchFailure(err: Error): boolean {
  return err instanceof TypeError && /fetch failed|terminated|network/i.test(err.message);
}

/** HTTP status carried by an SDK transport error, if any. */
export function httpStatusOf(err: unknown): number | undefined {
  if (err instanceof SdkHttpError) return err.status;
  if (err instanceof SseError) {
    return typeof err.code === 'number' && err.code >= 100 ? err.code : undefined;
  }
  if (err instanceof HttpStatusError) return err.status;
  // The legacy SSE transport reports a failed POST as a plain Error.
  if (err instanceof Error) {
    const match = /\(HTTP (\d{3})\)/.exec(err.message);
    if (match?.[1] !== undefined) return Number(match[1]);
  }
  return undefined;
}

/**
 * A non-2xx answer seen by this library's own direct call path (not the SDK's): the status and
 * the server's body text (already bounded).
 */
export class HttpStatusError extends Error {
  override readonly name = 'HttpStatusError';
  constructor(
    readonly status: number,
    message: string,
    /** The response's `WWW-Authenticate` (a server's header, not ours). */
    readonly wwwAuthenticate?: string,
  ) {
    super(message);
  }
}

/** The body text of an HTTP error, when the SDK or the direct path kept it. */
function httpErrorText(err: unknown): string {
  if (err instanceof SdkHttpError && typeof err.data.text === 'string') return err.data.text;
  return err instanceof Error ? err.message : String(err);
}

/**
 * Whether an HTTP error says a legacy session is gone: 404 (the 2025 spec), or 400 with
 * "No valid session ID" (SDK v1 servers, server-everything among them). Either way the request
 * was refused before it ran.
 */
export function isSessionLost(err: unknown): boolean {
  const status = httpStatusOf(err);
  if (status === 404) return true;
  return status === 400 && /no valid session id|session not found|invalid session/i.test(httpErrorText(err));
}

/** SDK codes that mean the era is not agreed (a stale prior, a lying server): never a transport hiccup. */
export function isEraFailure(err: unknown): boolean {
  if (err instanceof SdkError && err.code === SdkErrorCode.EraNegotiationFailed && !(err instanceof SdkHttpError))
    return true;
  return err instanceof ProtocolError && err.code === UNSUPPORTED_PROTOCOL_VERSION;
}

/** JSON-RPC code of `UnsupportedProtocolVersion` (2026-07-28). */
export const UNSUPPORTED_PROTOCOL_VERSION = -32022;

/** Text of an SDK error without the SDK's prefixes, scrubbed and bounded. */
function detailOf(err: unknown, secrets: readonly string[]): string {
  const raw = err instanceof Error ? err.message : String(err);
  const text = raw
    .replace(/^(Streamable HTTP error|SSE error|MCP error -?\d+): /, '')
    .replace(/^Error POSTing to endpoint: ?/, '');
  return scrub(text, secrets);
}

export interface ClassifyContext {
  /** The request's secret values (`requestSecrets`): every form of each is scrubbed from any text taken from the error. */
  secrets?: readonly string[];
  /** `WWW-Authenticate` value of the last 401 seen on this connection. */
  wwwAuthenticate?: string;
  transport?: 'http' | 'sse';
  /** The connection's era: a lost session is a legacy-only notion. */
  era?: 'modern' | 'legacy';
  /** What the failed request may have run, when the caller knows (the call path: {@link callRan}). */
  ran?: McpClientRan;
}

/**
 * Maps any error thrown by the MCP SDK during a request (after the connect) to an
 * {@link McpClientError}. `signal` is the caller's signal: the SDK reports a cancel as a
 * RequestTimeout, so only `signal.aborted` tells a cancel from a timeout.
 */
export function classifyMcpError(err: unknown, signal?: AbortSignal, ctx: ClassifyContext = {}): McpClientError {
  const classified = classify(err, signal, ctx);
  return ctx.ran === undefined ? classified : classified.withRan(ctx.ran);
}

function classify(err: unknown, signal: AbortSignal | undefined, ctx: ClassifyContext): McpClientError {
  const secrets = ctx.secrets ?? [];
  // The SDK's errors carry the server's text as it came, and a log line writes an error's causes.
  redactErrorChain(err, secrets);
  if (err instanceof McpClientError) return err;
  const base: McpClientErrorDetails = ctx.transport === undefined ? {} : { transport: ctx.transport };
  const cause = { cause: err };
  if (signal?.aborted) {
    return new McpClientError(McpClientErrorCode.Cancelled, 'MCP request cancelled', base, cause);
  }
  if (err instanceof SdkError && !(err instanceof SdkHttpError)) {
    if (err.code === SdkErrorCode.RequestTimeout) {
      return new McpClientError(
        McpClientErrorCode.Timeout,
        `MCP request timed out: ${detailOf(err, secrets)}`,
        base,
        cause,
      );
    }
    if (err.code === SdkErrorCode.ConnectionClosed || err.code === SdkErrorCode.NotConnected) {
      return new McpClientError(
        McpClientErrorCode.TransportError,
        `MCP connection closed: ${detailOf(err, secrets)}`,
        base,
        cause,
      );
    }
    if (err.code === SdkErrorCode.EraNegotiationFailed) {
      return new McpClientError(
        McpClientErrorCode.EraNegotiationFailed,
        `MCP era negotiation failed: ${detailOf(err, secrets)}`,
        base,
        cause,
      );
    }
  }
  if (err instanceof ProtocolError) {
    const details = { ...base, mcpCode: err.code };
    if (err.code === UNSUPPORTED_PROTOCOL_VERSION) {
      return new McpClientError(
        McpClientErrorCode.EraNegotiationFailed,
        `MCP server refused the protocol version: ${detailOf(err, secrets)}`,
        details,
        cause,
      );
    }
    return new McpClientError(
      McpClientErrorCode.ProtocolError,
      `MCP server error ${err.code}: ${detailOf(err, secrets)}`,
      details,
      cause,
    );
  }
  if (err instanceof UnauthorizedError) {
    return unauthorizedError(undefined, ctx, base, cause);
  }
  const status = httpStatusOf(err);
  if (status === 401) return unauthorizedError(status, ctx, base, cause);
  if (ctx.era !== 'modern' && isSessionLost(err)) {
    return new McpClientError(
      McpClientErrorCode.SessionExpired,
      `MCP session expired (HTTP ${status}): the request was not executed; reconnect and retry once`,
      { ...base, status: status ?? 404 },
      cause,
    );
  }
  if (status !== undefined) {
    return new McpClientError(
      McpClientErrorCode.TransportError,
      `MCP server answered HTTP ${status}: ${detailOf(err, secrets)}`,
      { ...base, status },
      cause,
    );
  }
  const network = networkCause(err);
  if (network !== undefined) {
    return new McpClientError(
      McpClientErrorCode.TransportError,
      `MCP transport failed: ${scrub(network, secrets)}`,
      base,
      cause,
    );
  }
  return new McpClientError(
    McpClientErrorCode.TransportError,
    `MCP transport error: ${detailOf(err, secrets)}`,
    base,
    cause,
  );
}

function unauthorizedError(
  status: number | undefined,
  ctx: ClassifyContext,
  base: McpClientErrorDetails,
  cause: { cause: unknown },
): McpClientError {
  const details: McpClientErrorDetails = { ...base, status: status ?? 401 };
  const challenge =
    cause.cause instanceof HttpStatusError && cause.cause.wwwAuthenticate !== undefined
      ? cause.cause.wwwAuthenticate
      : ctx.wwwAuthenticate;
  if (challenge !== undefined) details.wwwAuthenticate = challenge;
  return new McpClientError(
    McpClientErrorCode.Unauthorized,
    'MCP server answered 401 Unauthorized: check the configured credentials',
    details,
    cause,
  );
}

/**
 * HTTP statuses that refuse a request before it is processed (malformed, unauthorized, forbidden,
 * no such endpoint, method or media type, too large, throttled). Not every 4xx: a server that
 * aborts a request it was running answers 499 (the SDK's, on close), and 408 or 409 can follow
 * work done.
 */
const REFUSED_UNRUN: ReadonlySet<number> = new Set([400, 401, 403, 404, 405, 406, 411, 413, 414, 415, 421, 429, 431]);

/**
 * Socket error codes (Node's `code`, not a message) that prove no byte of the request reached the
 * server: the connect itself failed.
 */
const UNSENT_SOCKET_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
]);

/**
 * What a failed `tools/call` may have run, decided by type, status and socket code (never by a
 * message): `none` when the failure proves the server never ran it (no socket could be opened,
 * an HTTP refusal of {@link REFUSED_UNRUN} answering the request itself, a refused protocol
 * version, a connection already closed before the request was written); `maybe` for anything
 * after the request may have been written (a dropped or reset connection, a broken or malformed
 * answer, a 5xx, a JSON-RPC error, a timeout). `answered`: the response to the request had begun
 * (its status was read), so a later failure of this library's own (a body too large, a stream
 * that could not be resumed) broke an answer, and the request ran or may have.
 */
export function callRan(err: unknown, answered: boolean): McpClientRan {
  if (err instanceof McpClientError) return answered ? McpClientRan.Maybe : err.ran;
  if (isEraFailure(err)) return McpClientRan.None;
  if (err instanceof ProtocolError) return McpClientRan.Maybe;
  if (err instanceof SdkError && !(err instanceof SdkHttpError) && err.code === SdkErrorCode.NotConnected)
    return McpClientRan.None;
  const status = httpStatusOf(err);
  if (status !== undefined) return REFUSED_UNRUN.has(status) ? McpClientRan.None : McpClientRan.Maybe;
  if (answered) return McpClientRan.Maybe;
  return socketCodes(err).some((code) => UNSENT_SOCKET_CODES.has(code)) ? McpClientRan.None : McpClientRan.Maybe;
}

/** The socket codes along an error's causes (happy-eyeballs' AggregateError's errors too). */
function socketCodes(err: unknown, depth = 0): string[] {
  const out: string[] = [];
  let current = err;
  for (let d = depth; d < 8 && current instanceof Error; d++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') out.push(code);
    if (current instanceof AggregateError)
      for (const inner of current.errors as unknown[]) out.push(...socketCodes(inner, d + 1));
    current = current.cause;
  }
  return out;
}

/**
 * Whether a failure on a connection made from a modern prior says the prior no longer holds, and
 * proves the request was refused unrun: the server refused the version (-32022), or answered
 * like a legacy server (HTTP 400/404 for a request without a session, "not initialized").
 */
export function isStaleModernPrior(err: unknown): boolean {
  const cause = err instanceof McpClientError ? err.cause : err;
  if (isEraFailure(cause)) return true;
  if (cause instanceof SdkHttpError || cause instanceof HttpStatusError)
    return cause.status === 400 || cause.status === 404;
  return cause instanceof ProtocolError && cause.code === -32000 && /not initialized|session/i.test(cause.message);
}
