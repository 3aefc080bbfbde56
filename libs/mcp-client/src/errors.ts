import { redactSecrets, type SecretScrubber } from './scrub.js';
import { ProtocolError, SdkError, SdkErrorCode, SdkHttpError, SseError } from '@modelcontextprotocol/client';

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
 *   status of `REFUSED_UNRUN` (`./classify.ts`), a 401, a lost legacy session, a refused protocol version);
 * - `maybe`: it went out and its answer is lost, broken, late or cancelled: it may have run, so
 *   nothing sends it again on its own.
 */
export const McpClientRan = {
  None: 'none',
  Maybe: 'maybe',
} as const;
export type McpClientRan = (typeof McpClientRan)[keyof typeof McpClientRan];

/**
 * The stable `code` of the error a body cut at a bound of the connection's fetch errors with
 * (`@mcpx/outbound`'s `OutboundErrorCode.responseTooLarge`), and the `data.code` of the JSON-RPC
 * error that stands in for a POST's event stream cut there: decided by code, as that library is
 * not a dependency of this one.
 */
export const RESPONSE_TOO_LARGE = 'response_too_large';

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
  /**
   * The bound of the connection's fetch that cut the request's answer (`@mcpx/outbound`'s
   * `maxSseEventBytes`, `maxBodyBytes`…, and its limit), when a cut is why it failed.
   */
  bound?: { name: string; limit: number };
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
    return err instanceof Error && hasNetworkCode(err) ? err.message : undefined;
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

/**
 * Codes that name a network failure: Node's system errors (`ECONNREFUSED`, `ENOTFOUND`,
 * `ETIMEDOUT`), undici's error classes (`UND_ERR_SOCKET`, `UND_ERR_CONNECT_TIMEOUT`), TLS's.
 */
const NETWORK_CODE =
  /^(E[A-Z0-9]{2,}|UND_ERR_[A-Z_]+|ERR_SSL_[A-Z0-9_]+|ERR_TLS_[A-Z0-9_]+|CERT_[A-Z_]+|UNABLE_TO_[A-Z_]+|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN)$/;

/** Whether an error without a cause is itself a network failure: by its code, never its words. */
function hasNetworkCode(err: Error): boolean {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && NETWORK_CODE.test(code);
}

/**
 * The text of what a fetch itself rejected with, when that is a network error: the Fetch
 * standard rejects a network error with a TypeError (an abort is a DOMException), so a TypeError
 * seen at the fetch (`trackedFetch`'s `lastNetworkError`) is one whatever it says; its socket
 * error's text when it has a cause. Undefined for anything else.
 */
export function fetchRejectionText(err: unknown): string | undefined {
  if (!(err instanceof TypeError)) return undefined;
  return networkCause(err) ?? err.message;
}

/** HTTP status carried by an SDK transport error, if any. */
export function httpStatusOf(err: unknown): number | undefined {
  if (err instanceof SdkHttpError) return err.status;
  if (err instanceof SseError) {
    return typeof err.code === 'number' && err.code >= 100 ? err.code : undefined;
  }
  if (err instanceof HttpStatusError || err instanceof RefusedRpcError) return err.status;
  return legacySsePostStatus(err);
}

/**
 * The one reading of an SDK message, kept at the SDK boundary: SDK 2.4.0's legacy
 * `SSEClientTransport.send` throws a plain `Error("Error POSTing to endpoint (HTTP <status>): …")`
 * for a refused POST, its status only in the text (typescript-sdk#1176 asked for a typed status;
 * PR #1178 gave the Streamable HTTP transport `SdkHttpError`, not the SSE one). Nothing else
 * reads a message: every decision takes the status this returns.
 */
function legacySsePostStatus(err: unknown): number | undefined {
  if (!(err instanceof Error) || err.constructor !== Error) return undefined;
  const match = /^Error POSTing to endpoint \(HTTP (\d{3})\)/.exec(err.message);
  return match?.[1] === undefined ? undefined : Number(match[1]);
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
    /** The JSON-RPC error code of the body, when the body is a JSON-RPC error (any id). */
    readonly rpcCode?: number,
  ) {
    super(message);
  }
}

/**
 * A JSON-RPC error the server answered to our request in a non-2xx HTTP response (a 400 whose body
 * is the error response to our id): the transport refused the request before any handler ran.
 * Made by this library's direct call path, which sees the status; the SDK's own path delivers such
 * an answer as a plain {@link ProtocolError} and drops the status (SDK 2.4.0,
 * `StreamableHTTPClientTransport._send`).
 */
export class RefusedRpcError extends ProtocolError {
  constructor(
    readonly status: number,
    code: number,
    message: string,
    data?: unknown,
  ) {
    super(code, message, data);
  }
}

/** The JSON-RPC code a legacy transport gives its refusals of a session (`-32000`, "Bad Request: …"). */
export const LEGACY_TRANSPORT_REFUSAL = -32000;

/** Bodies longer than this are not parsed for a JSON-RPC code (a transport refusal is a few hundred bytes). */
const RPC_BODY_MAX_CHARS = 16 * 1024;

/** The `error.code` of a JSON-RPC error body (any id), or `undefined` when the text is not one. */
export function rpcErrorCodeInBody(text: string): number | undefined {
  if (text.length > RPC_BODY_MAX_CHARS) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (parsed === null || typeof parsed !== 'object') return undefined;
  const error = (parsed as { error?: unknown }).error;
  if (error === null || typeof error !== 'object') return undefined;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'number' && Number.isInteger(code) ? code : undefined;
}

/** The JSON-RPC code in the body of an HTTP error answer, read structurally (never from a message). */
export function rpcErrorCodeOf(err: unknown): number | undefined {
  if (err instanceof HttpStatusError) return err.rpcCode;
  if (err instanceof SdkHttpError && typeof err.data.text === 'string') return rpcErrorCodeInBody(err.data.text);
  return undefined;
}

/**
 * Whether an HTTP error says a legacy session is gone: 404 (the 2025 spec), or 400 whose body is a
 * JSON-RPC error of code {@link LEGACY_TRANSPORT_REFUSAL} (SDK v1 servers and their examples,
 * server-everything among them: "No valid session ID provided", "Server not initialized").
 * Either way the request was refused before it ran. Decided by status and code, never by text.
 */
export function isSessionLost(err: unknown): boolean {
  const status = httpStatusOf(err);
  if (status === 404) return true;
  return status === 400 && rpcErrorCodeOf(err) === LEGACY_TRANSPORT_REFUSAL;
}

/** SDK codes that mean the era is not agreed (a stale prior, a lying server): never a transport hiccup. */
export function isEraFailure(err: unknown): boolean {
  if (err instanceof SdkError && err.code === SdkErrorCode.EraNegotiationFailed && !(err instanceof SdkHttpError))
    return true;
  return err instanceof ProtocolError && err.code === UNSUPPORTED_PROTOCOL_VERSION;
}

/** JSON-RPC code of `UnsupportedProtocolVersion` (2026-07-28). */
export const UNSUPPORTED_PROTOCOL_VERSION = -32022;
