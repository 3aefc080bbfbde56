import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError, type CallToolRequest, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { McpClientError, McpClientErrorCode } from './errors.js';

/**
 * A `tools/call` sent straight over a Streamable HTTP session, beside the SDK client that owns it
 * (the handshake, the GET stream, notifications). Why not `client.request`:
 * - a POST response stream that breaks before the response leaves the SDK's request pending until
 *   its timeout (the SDK resumes only streams that sent an event id); here it fails at once with
 *   `transport_error` — the server may have executed the call, so it must not be retried;
 * - the SDK parses every result with zod and re-wraps each response body; a pass-through proxy
 *   needs neither (results are untrusted and bounded downstream), and the hot path is shorter.
 * Request ids are strings (`mcpx-N`), so they never collide with the SDK's numeric ids.
 */
export interface DirectCallTarget {
  url: URL;
  fetch: typeof fetch;
  /** The configured static headers. */
  headers: Record<string, string>;
  sessionId: string;
  protocolVersion: string | undefined;
  /** Sends `notifications/cancelled` for a request id on the session (best effort). */
  cancelled(requestId: string, reason: string): void;
}

export interface DirectCallOptions {
  timeoutMs: number;
  signal?: AbortSignal;
}

/** A response bigger than this is refused: a remote server's answer is untrusted. */
export const MAX_RESPONSE_BYTES = 32 * 1024 * 1024;

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
  try {
    const response = await target.fetch(target.url, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params }),
      signal: controller.signal,
    });
    sent = true;
    if (!response.ok) {
      const text = await response.text().catch(() => '');
      throw new StreamableHTTPError(response.status, `Error POSTing to endpoint: ${text}`);
    }
    const type = (response.headers.get('content-type') ?? '').split(';', 1)[0]!.trim().toLowerCase();
    let message: JsonRpcResponse | undefined;
    if (type === 'text/event-stream') message = await readSseResponse(response, id);
    else if (type === 'application/json') message = findResponse(parseBounded(await readBounded(response)), id);
    else {
      await response.body?.cancel().catch(() => {});
      throw new StreamableHTTPError(-1, `Unexpected content type: ${type || '(none)'}`);
    }
    if (message === undefined) {
      throw new McpClientError(
        McpClientErrorCode.TransportError,
        'MCP response stream ended before the result: the server may have executed the call',
        { transport: 'http' },
      );
    }
    if (message.error !== undefined) {
      const e = message.error;
      throw new McpError(typeof e.code === 'number' ? e.code : -32603, typeof e.message === 'string' ? e.message : 'error', e.data);
    }
    const result = message.result;
    if (result === null || typeof result !== 'object' || Array.isArray(result)) {
      throw new McpClientError(McpClientErrorCode.TransportError, 'MCP server answered tools/call with a result that is not an object', { transport: 'http' });
    }
    return result as CallToolResult;
  } catch (err) {
    if (why === 'timeout') {
      if (sent || controller.signal.aborted) target.cancelled(id, 'timeout');
      throw new McpClientError(McpClientErrorCode.Timeout, `MCP request timed out after ${opts.timeoutMs} ms`, { transport: 'http' }, { cause: err });
    }
    if (why === 'cancelled') {
      target.cancelled(id, 'cancelled by the caller');
      throw new McpClientError(McpClientErrorCode.Cancelled, 'MCP request cancelled', { transport: 'http' }, { cause: err });
    }
    if (sent && !(err instanceof McpClientError) && !(err instanceof McpError) && !(err instanceof StreamableHTTPError)) {
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

interface JsonRpcResponse {
  id?: unknown;
  result?: unknown;
  error?: { code?: unknown; message?: unknown; data?: unknown };
}

function findResponse(data: unknown, id: string): JsonRpcResponse | undefined {
  const list = Array.isArray(data) ? data : [data];
  for (const m of list) {
    if (m !== null && typeof m === 'object' && (m as JsonRpcResponse).id === id) return m as JsonRpcResponse;
  }
  return undefined;
}

function parseBounded(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new McpClientError(McpClientErrorCode.TransportError, 'MCP server answered with malformed JSON', { transport: 'http' });
  }
}

function tooLarge(): McpClientError {
  return new McpClientError(McpClientErrorCode.TransportError, `MCP response is larger than ${MAX_RESPONSE_BYTES} bytes`, { transport: 'http' });
}

async function readBounded(response: Response): Promise<string> {
  const declared = Number(response.headers.get('content-length'));
  if (declared > MAX_RESPONSE_BYTES) {
    await response.body?.cancel().catch(() => {});
    throw tooLarge();
  }
  if (response.body === null) return '';
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.byteLength;
    if (bytes > MAX_RESPONSE_BYTES) {
      await reader.cancel().catch(() => {});
      throw tooLarge();
    }
    text += decoder.decode(value, { stream: true });
  }
  return text + decoder.decode();
}

/**
 * Reads an SSE response until the event carrying our response, then releases the stream.
 * Other messages on it (progress, logging) are skipped.
 */
async function readSseResponse(response: Response, id: string): Promise<JsonRpcResponse | undefined> {
  if (response.body === null) return undefined;
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let bytes = 0;
  let finished = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        finished = true;
        return undefined;
      }
      bytes += value.byteLength;
      if (bytes > MAX_RESPONSE_BYTES) {
        finished = true;
        await reader.cancel().catch(() => {});
        throw tooLarge();
      }
      buffer += decoder.decode(value, { stream: true });
      let end: number;
      while ((end = eventEnd(buffer)) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end).replace(/^(\r?\n)+/, '');
        const data = eventData(block);
        if (data === undefined) continue;
        let parsed: unknown;
        try {
          parsed = JSON.parse(data);
        } catch {
          continue;
        }
        const found = findResponse(parsed, id);
        if (found !== undefined) return found;
      }
    }
  } finally {
    // The server ends the stream right after the response: read it to its end in the background
    // rather than cancel it, so the keep-alive socket is reused instead of torn down per call.
    if (!finished) void drain(reader, bytes);
  }
}

async function drain(reader: ReadableStreamDefaultReader<Uint8Array>, bytes: number): Promise<void> {
  // A server that keeps the stream open after the response does not get to hold the socket long.
  const timer = setTimeout(() => void reader.cancel().catch(() => {}), 5_000);
  timer.unref();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      bytes += value.byteLength;
      if (bytes > MAX_RESPONSE_BYTES) {
        await reader.cancel();
        return;
      }
    }
  } catch {
    // The stream broke after our response: nothing is lost.
  } finally {
    clearTimeout(timer);
  }
}

/** Index just past an event's last line (the blank line that ends it), or -1. */
function eventEnd(buffer: string): number {
  const lf = buffer.indexOf('\n\n');
  const crlf = buffer.indexOf('\r\n\r\n');
  if (lf < 0) return crlf < 0 ? -1 : crlf + 2;
  if (crlf < 0) return lf + 1;
  return Math.min(lf + 1, crlf + 2);
}

/** The joined `data:` lines of an event whose type is `message` (or unset). */
function eventData(block: string): string | undefined {
  let data: string | undefined;
  for (const raw of block.split('\n')) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line.startsWith('data:')) {
      const v = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
      data = data === undefined ? v : `${data}\n${v}`;
    } else if (line.startsWith('event:')) {
      const ev = line.slice(6).trim();
      if (ev !== '' && ev !== 'message') return undefined;
    }
  }
  return data;
}
