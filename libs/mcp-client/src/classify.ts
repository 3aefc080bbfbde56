/**
 * What an SDK failure after the connect is (`classifyMcpError`), and what a failed call may have
 * run (`callRan`), decided by type, code, status and socket code.
 */
import { ProtocolError, SdkError, SdkErrorCode, SdkHttpError, UnauthorizedError } from '@modelcontextprotocol/client';
import { redactErrorChain } from './scrub.js';
import {
  HttpStatusError,
  httpStatusOf,
  isEraFailure,
  isSessionLost,
  LEGACY_TRANSPORT_REFUSAL,
  McpClientError,
  McpClientErrorCode,
  McpClientRan,
  networkCause,
  RefusedRpcError,
  RESPONSE_TOO_LARGE,
  scrub,
  UNSUPPORTED_PROTOCOL_VERSION,
  type McpClientErrorDetails,
} from './errors.js';

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
  /**
   * What the connection's transport knows of a failure that it caused (a legacy SSE session whose
   * event stream ended: `sseStreamFailure`), or `undefined` to classify it as it is.
   */
  transportFailure?: (err: unknown) => McpClientError | undefined;
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
  const known = ctx.transportFailure?.(err);
  if (known !== undefined) return known;
  const cut = cutStandIn(err, secrets, base, cause);
  if (cut !== undefined) return cut;
  const sdk = sdkErrorOf(err, secrets, base, cause);
  if (sdk !== undefined) return sdk;
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

/**
 * The JSON-RPC error that stands in for an event stream the connection's fetch cut at a bound
 * (`@mcpx/outbound`'s `cutoffEvents`: code -32000, `data: {code: 'response_too_large', bound}`),
 * ending a POST's stream so the request fails at once: the answer was lost (`transport_error`,
 * `ran: maybe`, `details.bound`), not the server's error. Decided by code and data, never by the
 * text. A server can send the same error itself; it then only passes for what it could cause
 * anyway by sending an answer over the bound.
 */
function cutStandIn(
  err: unknown,
  secrets: readonly string[],
  base: McpClientErrorDetails,
  cause: { cause: unknown },
): McpClientError | undefined {
  if (!(err instanceof ProtocolError) || err.code !== CUT_STAND_IN_CODE) return undefined;
  const data = err.data as { code?: unknown; bound?: { name?: unknown; limit?: unknown } } | null | undefined;
  const bound = data?.bound;
  // The bound is named on spans: a name of the bounds' form only (no server text), never a secret.
  if (
    data?.code !== RESPONSE_TOO_LARGE ||
    typeof bound?.name !== 'string' ||
    !BOUND_NAME.test(bound.name) ||
    scrub(bound.name, secrets) !== bound.name ||
    !Number.isSafeInteger(bound.limit) ||
    (bound.limit as number) <= 0
  )
    return undefined;
  return new McpClientError(
    McpClientErrorCode.TransportError,
    `MCP answer was cut at a bound of the connection (the server may have executed the request): ${detailOf(err, secrets)}`,
    { ...base, ran: McpClientRan.Maybe, bound: { name: bound.name, limit: bound.limit as number } },
    cause,
  );
}

/** The JSON-RPC code of the stand-in answer for a cut stream ({@link cutStandIn}); its `data.code` is {@link RESPONSE_TOO_LARGE}. */
const CUT_STAND_IN_CODE = -32000;
/** The form of a bound's name (`maxSseEventBytes`, `maxBodyBytes`, `deadlineMs`…). */
const BOUND_NAME = /^[a-z][A-Za-z]{0,47}$/;

/** The SDK's own failures (timeout, closed, era) and a server's JSON-RPC error, typed; `undefined` for any other error. */
function sdkErrorOf(
  err: unknown,
  secrets: readonly string[],
  base: McpClientErrorDetails,
  cause: { cause: unknown },
): McpClientError | undefined {
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
    // A JSON-RPC error that came in a non-2xx answer keeps its status: the transport refused it.
    const details: McpClientErrorDetails = { ...base, mcpCode: err.code };
    if (err instanceof RefusedRpcError) details.status = err.status;
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
  return undefined;
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
  if (err instanceof RefusedRpcError) return REFUSED_UNRUN.has(err.status) ? McpClientRan.None : McpClientRan.Maybe;
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
 * proves the request was refused unrun: the server refused the version (-32022), or answered like
 * a legacy server: HTTP 400/404 to a request without a session, or a JSON-RPC error of code
 * {@link LEGACY_TRANSPORT_REFUSAL} in an HTTP 400 ({@link RefusedRpcError}, the direct call path).
 * Decided by type, status and code only, never by the text: a -32000 that a tool handler threw
 * (HTTP 200) is the server's answer, not a stale verdict. The SDK's path delivers a 400 whose body
 * answers our id as a plain {@link ProtocolError} without its status (SDK 2.4.0,
 * `StreamableHTTPClientTransport._send`); SDK v1 and v2 servers (server-everything among them)
 * answer a request without a session with `id: null`, which the SDK reports as an `SdkHttpError`
 * with its status, so the SDK's path sees the typed 400.
 */
export function isStaleModernPrior(err: unknown): boolean {
  const cause = err instanceof McpClientError ? err.cause : err;
  if (isEraFailure(cause)) return true;
  if (cause instanceof SdkHttpError || cause instanceof HttpStatusError)
    return cause.status === 400 || cause.status === 404;
  return cause instanceof RefusedRpcError && cause.code === LEGACY_TRANSPORT_REFUSAL && cause.status === 400;
}
