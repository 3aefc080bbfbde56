import { ProtocolError, type CallToolRequest, type CallToolResult } from '@modelcontextprotocol/client';
import type { RawBody, RawResponse } from './direct-request.js';
import { HttpStatusError, McpClientError, McpClientErrorCode } from './errors.js';
import {
  discard,
  findResponse,
  header,
  ignore,
  MAX_RESPONSE_BYTES,
  mediaType,
  readRawSse,
  SseResponseScanner,
  tooLarge,
  type JsonRpcResponse,
} from './response-stream.js';
import { resumeResponse, type ResumeTarget } from './sse-resume.js';

/**
 * A legacy-era `tools/call` sent straight over a Streamable HTTP session, beside the SDK client
 * that owns it (the handshake, the GET stream, notifications). Modern-era calls never come here:
 * they hold no session and 2026-07-28 removed resumption, so the SDK path serves them. Why not
 * `client.request` for a legacy session:
 * - a POST response stream that breaks before the response: after an event with an id, it is
 *   resumed with a GET carrying `Last-Event-ID` (`sse-resume.ts`, as the SDK does); without one
 *   it fails at once with `transport_error` instead of waiting for the timeout — the server may
 *   have executed the call, so it must not be retried;
 * - the SDK parses every result with zod and re-wraps each response body; a pass-through proxy
 *   needs neither (results are untrusted and bounded downstream), and the hot path is shorter.
 * Request ids are strings (`mcpx-N`), so they never collide with the SDK's numeric ids.
 */
export interface DirectCallTarget extends ResumeTarget {
  /** Sends `notifications/cancelled` for a request id on the session (best effort). */
  cancelled(requestId: string, reason: string): void;
}

export interface DirectCallOptions {
  timeoutMs: number;
  signal?: AbortSignal;
  /** Told when a broken response stream was resumed, or could not be (for spans and metrics). */
  onResume?: (outcome: 'resumed' | 'failed') => void;
}

let nextId = 0;

export async function directCall(target: DirectCallTarget, params: CallToolRequest['params'], opts: DirectCallOptions): Promise<CallToolResult> {
  const id = `mcpx-${++nextId}`;
  const controller = new AbortController();
  let why: 'timeout' | 'cancelled' | undefined;
  const timer = setTimeout(() => {
    why = 'timeout';
    controller.abort();
  }, opts.timeoutMs);
  const outer = opts.signal;
  const onAbort = (): void => {
    why ??= 'cancelled';
    controller.abort();
  };
  if (outer?.aborted) onAbort();
  else outer?.addEventListener('abort', onAbort, { once: true });
  const headers: Record<string, string> = {
    ...target.headers,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-session-id': target.sessionId,
  };
  if (target.protocolVersion !== undefined) headers['mcp-protocol-version'] = target.protocolVersion;
  let sent = false;
  const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params });
  // Holds what a resumption needs (last event id, retry) and the bytes read, over all the call's streams.
  const scanner = new SseResponseScanner(id);
  try {
    let message: JsonRpcResponse | undefined;
    let broke: unknown;
    try {
      const res = await target.request(target.url, { method: 'POST', headers, body, signal: controller.signal });
      sent = true;
      message = await readRawResponse(res, scanner);
    } catch (err) {
      // Only an event stream that got as far as an event id can be resumed.
      if (scanner.lastEventId === undefined || controller.signal.aborted || err instanceof McpClientError) throw err;
      broke = err;
    }
    if (message === undefined && scanner.lastEventId !== undefined) {
      try {
        message = await resumeResponse(target, scanner, controller.signal, broke);
      } catch (err) {
        opts.onResume?.('failed');
        throw err;
      }
      opts.onResume?.('resumed');
    }
    return resultOf(message);
  } catch (err) {
    if (why === 'timeout') {
      if (sent || controller.signal.aborted) target.cancelled(id, 'timeout');
      throw new McpClientError(McpClientErrorCode.Timeout, `MCP request timed out after ${opts.timeoutMs} ms`, { transport: 'http' }, { cause: err });
    }
    if (why === 'cancelled') {
      target.cancelled(id, 'cancelled by the caller');
      throw new McpClientError(McpClientErrorCode.Cancelled, 'MCP request cancelled', { transport: 'http' }, { cause: err });
    }
    if (sent && !(err instanceof McpClientError) && !(err instanceof ProtocolError) && !(err instanceof HttpStatusError)) {
      // The request reached the server and the answer broke off: it may have run.
      throw new McpClientError(
        McpClientErrorCode.TransportError,
        `MCP connection dropped during the call (the server may have executed it): ${err instanceof Error ? err.message : String(err)}`,
        { transport: 'http' },
        { cause: err },
      );
    }
    throw err;
  } finally {
    clearTimeout(timer);
    outer?.removeEventListener('abort', onAbort);
  }
}

function resultOf(message: JsonRpcResponse | undefined): CallToolResult {
  if (message === undefined) {
    throw new McpClientError(
      McpClientErrorCode.TransportError,
      'MCP response ended before the result, with no event id to resume from: the server may have executed the call',
      { transport: 'http' },
    );
  }
  if (message.error !== undefined) {
    const e = message.error;
    throw new ProtocolError(typeof e.code === 'number' ? e.code : -32603, typeof e.message === 'string' ? e.message : 'error', e.data);
  }
  const result = message.result;
  if (result === null || typeof result !== 'object' || Array.isArray(result)) {
    throw new McpClientError(McpClientErrorCode.TransportError, 'MCP server answered tools/call with a result that is not an object', { transport: 'http' });
  }
  return result as CallToolResult;
}

/**
 * The answer: status, then the JSON body or the SSE stream up to our response, read from the
 * Node stream (no web streams), bounded.
 */
async function readRawResponse(res: RawResponse, scanner: SseResponseScanner): Promise<JsonRpcResponse | undefined> {
  const { statusCode, body } = res;
  if (statusCode < 200 || statusCode > 299) {
    // A 3xx lands here too: redirects are not followed on the call path.
    const text = await readRawText(body, 64 * 1024).catch(() => '');
    throw new HttpStatusError(statusCode, `Error POSTing to endpoint: ${text}`);
  }
  const type = mediaType(header(res.headers, 'content-type'));
  if (type === 'application/json') {
    if (Number(header(res.headers, 'content-length')) > MAX_RESPONSE_BYTES) {
      discard(body);
      throw tooLarge();
    }
    return findResponse(parseBounded(await readRawText(body, MAX_RESPONSE_BYTES)), scanner.id);
  }
  if (type === 'text/event-stream') return readRawSse(body, scanner);
  discard(body);
  throw new McpClientError(McpClientErrorCode.TransportError, `MCP server answered tools/call with an unexpected content type: ${type || '(none)'}`, { transport: 'http' });
}

/** The whole body as text; more than `limit` bytes destroys the stream and fails (or, for an error body, truncates). */
function readRawText(body: RawBody, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    const onData = (chunk: Buffer): void => {
      bytes += chunk.length;
      if (bytes > limit) {
        cleanup();
        discard(body);
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8'));
    };
    const onError = (err: Error): void => {
      cleanup();
      reject(err);
    };
    const cleanup = (): void => {
      body.removeListener('data', onData);
      body.removeListener('end', onEnd);
      body.removeListener('error', onError);
      body.on('error', ignore);
    };
    body.on('data', onData);
    body.on('end', onEnd);
    body.on('error', onError);
  });
}

function parseBounded(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new McpClientError(McpClientErrorCode.TransportError, 'MCP server answered with malformed JSON', { transport: 'http' });
  }
}
