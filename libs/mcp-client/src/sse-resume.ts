import { setTimeout as sleep } from 'node:timers/promises';
import { McpClientError, McpClientErrorCode, McpClientRan } from './errors.js';
import type { McpHttpRequest } from './http-request.js';
import {
  discard,
  header,
  mediaType,
  readSseResponse,
  type JsonRpcResponse,
  type SseResponseScanner,
} from './body-reader.js';

/** Wait before a resumption when the server sent no `retry:` (the SDK's first reconnection delay). */
export const RESUME_DEFAULT_WAIT_MS = 1_000;
/** A server's `retry:` is honoured up to this: a longer one is cut short, not obeyed. */
export const RESUME_MAX_WAIT_MS = 5_000;
/** Resumptions in a row that bring no new event before the call fails. */
export const RESUME_MAX_STALLED = 3;
/** Resumptions of one call in all, however much each one brings (a polling server included). */
export const RESUME_MAX_ATTEMPTS = 30;
/** An event id longer than this is not sent back as a header. */
const MAX_EVENT_ID_CHARS = 1_024;

/** The session a direct call runs on, and a resumption with it. */
export interface ResumeTarget {
  url: URL;
  /** Sends the POST and the resumption GETs. */
  request: McpHttpRequest;
  /** The configured static headers. */
  headers: Record<string, string>;
  sessionId: string;
  protocolVersion: string | undefined;
}

/**
 * Resumes a `tools/call` response stream that ended or broke before our response, after an event
 * with an id (MCP 2025-11-25, Streamable HTTP, "Resumability and Redelivery"; legacy sessions only: 2026-07-28
 * removed resumption): waits the server's
 * `retry:` (capped at {@link RESUME_MAX_WAIT_MS}), sends a GET to the endpoint with `Last-Event-ID`
 * and the session headers, and reads the events it redelivers until the response for our id. A
 * resumed stream that breaks again is resumed from its own last event id, within
 * {@link RESUME_MAX_STALLED} and {@link RESUME_MAX_ATTEMPTS}.
 *
 * `signal` (the call's timeout or cancel) ends it at any point with its abort reason. Otherwise
 * it fails with `transport_error` (never retryable: the server may have executed the call) when
 * the server refuses the GET (any 4xx, e.g. 405 for a server without GET streams; `details.status`
 * says which), answers it with something other than an event stream, or never delivers the
 * response. A 5xx or a network failure on the GET counts as a stalled resumption.
 */
export async function resumeResponse(
  target: ResumeTarget,
  scanner: SseResponseScanner,
  signal: AbortSignal,
  cause: unknown,
): Promise<JsonRpcResponse> {
  const headers: Record<string, string> = {
    ...target.headers,
    accept: 'text/event-stream',
    'mcp-session-id': target.sessionId,
  };
  if (target.protocolVersion !== undefined) headers['mcp-protocol-version'] = target.protocolVersion;
  let lastFailure = cause;
  let stalled = 0;
  let attempts = 0;
  while (stalled < RESUME_MAX_STALLED && attempts < RESUME_MAX_ATTEMPTS) {
    const from = scanner.lastEventId;
    if (from === undefined || from.length > MAX_EVENT_ID_CHARS || !/^[\x20-\x7e]*$/.test(from)) {
      throw resumeError('the server sent no event id that can be sent back', undefined, lastFailure);
    }
    await sleep(Math.min(scanner.retryMs ?? RESUME_DEFAULT_WAIT_MS, RESUME_MAX_WAIT_MS), undefined, { signal });
    attempts += 1;
    headers['last-event-id'] = from;
    scanner.restart();
    try {
      const found = await resumeWithRequest(target.url, target.request, headers, scanner, signal);
      if (found !== undefined) return found;
      lastFailure = undefined;
    } catch (err) {
      if (signal.aborted || err instanceof McpClientError) throw err;
      lastFailure = err;
    }
    stalled = scanner.lastEventId === from ? stalled + 1 : 0;
  }
  throw resumeError(
    `${attempts} resumption${attempts === 1 ? '' : 's'} with Last-Event-ID did not deliver it`,
    undefined,
    lastFailure,
  );
}

async function resumeWithRequest(
  url: URL,
  request: McpHttpRequest,
  headers: Record<string, string>,
  scanner: SseResponseScanner,
  signal: AbortSignal,
): Promise<JsonRpcResponse | undefined> {
  const res = await request(url, { method: 'GET', headers, signal });
  const status = res.statusCode;
  if (status < 200 || status > 299) {
    discard(res.body);
    throw refusedOrRetry(status);
  }
  const type = mediaType(header(res.headers, 'content-type'));
  if (type !== 'text/event-stream') {
    discard(res.body);
    throw resumeError(`the server answered the resumption GET with ${type || 'no content type'}`, status);
  }
  return readSseResponse(res.body, scanner);
}

/** A 4xx (or an unfollowed 3xx) is the server's final word; a 5xx may pass. */
function refusedOrRetry(status: number): Error {
  if (status >= 500) return new Error(`HTTP ${status} on the resumption GET`);
  const why = status === 405 ? ' (it does not offer GET streams)' : '';
  return resumeError(`the server refused the resumption GET with HTTP ${status}${why}`, status);
}

function resumeError(why: string, status: number | undefined, cause?: unknown): McpClientError {
  return new McpClientError(
    McpClientErrorCode.TransportError,
    `MCP response stream broke before the result and could not be resumed: ${why}; the server may have executed the call`,
    status === undefined
      ? { transport: 'http', ran: McpClientRan.Maybe }
      : { transport: 'http', status, ran: McpClientRan.Maybe },
    cause === undefined ? undefined : { cause },
  );
}
