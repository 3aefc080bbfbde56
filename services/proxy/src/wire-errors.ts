import { ErrorCodes, WireError } from '@mcpx/contracts';
import { isRedisUnavailable, REDIS_RETRY_AFTER_MS } from '@mcpx/locks';
import { McpClientError } from '@mcpx/mcp-client';
import { OutboundRefusedError } from '@mcpx/outbound';

/**
 * Errors thrown once the call's request was handed to the remote server's connection (the
 * `tools/call` itself, not the connect before it). Only these may have run on the server.
 */
const sent = new WeakSet<object>();

/** Marks what `call` throws as thrown after the request went out (see {@link toWire}). */
export async function sentCall<T>(call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (err) {
    if (err !== null && typeof err === 'object') sent.add(err);
    throw err;
  }
}

/**
 * HTTP statuses that refuse a request before it is processed (malformed, forbidden, no such
 * endpoint, method or media type, too large, throttled). Not every 4xx: a server that aborts a
 * request it was running answers 499 (the SDK's, on close), 408 or 409 can follow work done.
 */
const REFUSED_UNRUN = new Set([400, 403, 404, 405, 406, 411, 413, 414, 415, 421, 429, 431]);

/** Socket errors that prove no byte of the request reached the server. */
const UNSENT_CAUSE = /\b(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|EADDRNOTAVAIL)\b/;

/**
 * Whether a transport failure after the request was handed over still proves the server never
 * ran it: a connection that was already closed, a refused socket, or an HTTP refusal answering
 * the request itself ({@link REFUSED_UNRUN}; not a refused resumption). Anything else (a dropped or broken response, a 5xx, a
 * malformed or oversized answer) may have run.
 */
function provablyUnsent(err: McpClientError): boolean {
  // The client's own word that the request was out (a broken stream it could not resume).
  if (/may have executed/.test(err.message)) return false;
  if (err.status !== undefined && REFUSED_UNRUN.has(err.status)) return true;
  if (err.cause === undefined && /connection is closed/.test(err.message)) return true;
  return causes(err.cause).some((c) => UNSENT_CAUSE.test(c));
}

/** The socket codes and messages along an error's causes (happy-eyeballs' AggregateError too). */
function causes(err: unknown): string[] {
  const out: string[] = [];
  let current = err;
  for (let depth = 0; depth < 8 && current instanceof Error; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') out.push(code);
    out.push(current.message);
    if (current instanceof AggregateError) out.push(...current.errors.flatMap((e) => causes(e)));
    current = current.cause;
  }
  return out;
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
 * request went out that does not prove otherwise is `maybe_executed` (never retried).
 */
export function toWire(err: unknown): WireError {
  if (err instanceof WireError) return err;
  const refused = outboundRefusal(err);
  if (refused !== undefined) {
    // No socket was opened to the refused address: nothing ran, and the same policy refuses again.
    return new WireError(ErrorCodes.outboundRefused, `the connector's outbound policy refused the server's address: ${refused.message}`, {
      reason: refused.reason,
      ...(refused.address !== undefined ? { kind: refused.address.kind } : {}),
    });
  }
  const afterSend = err !== null && typeof err === 'object' && sent.has(err);
  if (err instanceof McpClientError) {
    switch (err.code) {
      case 'unauthorized':
        return new WireError(ErrorCodes.authRequired, err.message);
      case 'timeout':
        return new WireError(ErrorCodes.timeout, err.message);
      case 'cancelled':
        return new WireError(ErrorCodes.cancelled, 'the call was cancelled');
      case 'protocol_error':
        return new WireError(ErrorCodes.serverError, err.message, err.mcpCode !== undefined ? { mcpCode: err.mcpCode } : {});
      case 'maybe_executed':
        // The request went out and its answer was lost: never retried, the caller decides.
        return maybeExecuted(err.message);
      case 'transport_error':
        if (afterSend && !provablyUnsent(err)) return maybeExecuted(err.message);
        return new WireError(ErrorCodes.transportError, err.message);
      case 'era_negotiation_failed':
      case 'connect_failed':
      case 'session_expired':
        return new WireError(ErrorCodes.transportError, err.message);
    }
  }
  if (afterSend) return maybeExecuted('the call failed after it was sent');
  return new WireError(ErrorCodes.internal, 'internal error');
}

function maybeExecuted(why: string): WireError {
  return new WireError(ErrorCodes.maybeExecuted, `the call may have run on the server, but its answer was lost (${why}); it was not retried`);
}

/**
 * For a step before the call is sent (an approval consumed or recorded, an answered question
 * looked up): Redis out of reach, or a command that timed out, is the typed `unavailable`
 * (dependency redis, retry after a moment; nothing was sent to the server), never `internal`.
 * Anything else is returned as it is.
 */
export function beforeSend(err: unknown): unknown {
  if (err instanceof WireError || !isRedisUnavailable(err)) return err;
  return new WireError(ErrorCodes.unavailable, 'redis is unavailable: the call was not sent to the server', { dependency: 'redis', retryAfterMs: REDIS_RETRY_AFTER_MS });
}
