import { ERROR_TRAITS, ErrorCodes, WireError, type ErrorCode } from '@mcpx/contracts';
import { isRedisUnavailable, REDIS_RETRY_AFTER_MS } from '@mcpx/shared-state';
import { McpClientError, McpClientRan, type McpClientErrorCode } from '@mcpx/mcp-client';
import { OutboundErrorCode, OutboundRefusedError, findOutboundError } from '@mcpx/outbound';
import { addResponseCutEvent, type Span } from '@mcpx/telemetry';

/**
 * Errors thrown once the call was handed to the remote server's connection (the `tools/call`
 * itself, not the connect before it). The MCP client says what ran on each of its own errors
 * (`McpClientError.ran`); this set is for anything else thrown there, which may have run.
 */
const sent = new WeakSet<object>();

/** Marks what `call` throws as thrown after the request was handed over (see {@link toWire}). */
export async function sentCall<T>(call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (err) {
    if (err !== null && typeof err === 'object') sent.add(err);
    throw err;
  }
}

/** The wire code of each MCP client code, before what ran is weighed. */
const CLIENT_WIRE_CODES: { readonly [C in McpClientErrorCode]: ErrorCode } = {
  unauthorized: ErrorCodes.authRequired,
  timeout: ErrorCodes.timeout,
  cancelled: ErrorCodes.cancelled,
  protocol_error: ErrorCodes.serverError,
  maybe_executed: ErrorCodes.maybeExecuted,
  transport_error: ErrorCodes.transportError,
  era_negotiation_failed: ErrorCodes.transportError,
  connect_failed: ErrorCodes.transportError,
  session_expired: ErrorCodes.transportError,
};

/**
 * The wire code of an MCP client error follows from its code and from what ran: a code whose
 * traits (`ERROR_TRAITS`) say nothing ran is never said of a request that may have run; that is
 * `maybe_executed` (never retried).
 */
function clientWire(err: McpClientError): WireError {
  const code = CLIENT_WIRE_CODES[err.code];
  if (err.ran === McpClientRan.Maybe && ERROR_TRAITS[code].ran === 'none') return maybeExecuted(err.message);
  if (code === ErrorCodes.cancelled) return new WireError(code, 'the call was cancelled');
  if (code === ErrorCodes.serverError)
    return new WireError(code, err.message, err.mcpCode !== undefined ? { mcpCode: err.mcpCode } : {});
  // The request went out and its answer was lost: never retried, the caller decides.
  if (code === ErrorCodes.maybeExecuted) return maybeExecuted(err.message);
  return new WireError(code, err.message);
}

/** The outbound policy's refusal somewhere in an error's causes. */
function outboundRefusal(err: unknown): OutboundRefusedError | undefined {
  let current = err;
  for (let depth = 0; depth < 8 && current instanceof Error; depth++) {
    if (current instanceof OutboundRefusedError) return current;
    current = current.cause;
  }
  return undefined;
}

/**
 * Maps the MCP client's local errors onto the wire codes the runtime shows the model. The one
 * rule that matters: `transport_error` (retryable) only when nothing ran; a failure after the
 * request went out that does not prove otherwise is `maybe_executed` (never retried). What ran
 * is the client's word (`McpClientError.ran`), never read from a message.
 */
export function toWire(err: unknown): WireError {
  if (err instanceof WireError) return err;
  const refused = outboundRefusal(err);
  if (refused !== undefined) {
    // No socket was opened to the refused address: nothing ran, and the same policy refuses again.
    return new WireError(
      ErrorCodes.outboundRefused,
      `the connector's outbound policy refused the server's address: ${refused.message}`,
      {
        reason: refused.reason,
        ...(refused.address !== undefined ? { kind: refused.address.kind } : {}),
      },
    );
  }
  if (err instanceof McpClientError) return clientWire(err);
  if (err !== null && typeof err === 'object' && sent.has(err))
    return maybeExecuted('the call failed after it was sent');
  return new WireError(ErrorCodes.internal, 'internal error');
}

function maybeExecuted(why: string): WireError {
  return new WireError(
    ErrorCodes.maybeExecuted,
    `the call may have run on the server, but its answer was lost (${why}); it was not retried`,
  );
}

/**
 * For a step before the call is sent (an approval consumed or recorded, an answered question
 * looked up): Redis out of reach, or a command that timed out, is the typed `unavailable`
 * (dependency redis, retry after a moment; nothing was sent to the server), never `internal`.
 * Anything else is returned as it is.
 */
export function beforeSend(err: unknown): unknown {
  if (err instanceof WireError || !isRedisUnavailable(err)) return err;
  return new WireError(ErrorCodes.unavailable, 'redis is unavailable: the call was not sent to the server', {
    dependency: 'redis',
    retryAfterMs: REDIS_RETRY_AFTER_MS,
  });
}

/**
 * Adds `outbound.response_cut` to a request's span when `err`, what the request failed with, is
 * (or was caused by) the outbound bounds cutting its answer: the outbound error among its causes,
 * or the bound an MCP client error names (a cut event stream whose stand-in answer came back:
 * `McpClientError.details.bound`). The proxy's trace context does not follow awaits, so the span
 * is the one the request holds, not the one active where the cut is heard
 * (docs/operations.md#trace-context).
 */
export function markResponseCut(span: Span, err: unknown): void {
  const cut = findOutboundError(err);
  if (cut?.code === OutboundErrorCode.responseTooLarge) addResponseCutEvent(span, cut);
  else if (err instanceof McpClientError && err.details.bound !== undefined)
    addResponseCutEvent(span, { details: { bound: err.details.bound } });
}
