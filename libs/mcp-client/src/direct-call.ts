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

/**
 * A lower-level request beside the fetch (`@mcpx/outbound`'s `request`, kept by the telemetry's
 * `tracingFetch`): when the target's fetch carries one, the call goes over it — same connection
 * pool and outbound checks, no WHATWG Request/Response or web streams. It never follows
 * redirects (a 3xx fails the call); a failure before the response is a `TypeError('fetch failed')`
 * like fetch's.
 */
export type DirectRequest = (
  url: URL,
  opts: { method: string; headers: Record<string, string>; body?: string; signal?: AbortSignal },
) => Promise<RawResponse>;

interface RawResponse {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  body: RawBody;
}

type RawBody = NodeJS.ReadableStream & { destroy(error?: Error): unknown };

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
  const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params });
  const request = (target.fetch as { request?: DirectRequest }).request;
  try {
    let message: JsonRpcResponse | undefined;
    if (typeof request === 'function') {
      const res = await request(target.url, { method: 'POST', headers, body, signal: controller.signal });
      sent = true;
      message = await readRawResponse(res, id);
    } else {
      const response = await target.fetch(target.url, { method: 'POST', headers, body, signal: controller.signal });
      sent = true;
      if (!response.ok) {
        const text = await response.text().catch(() => '');
        throw new StreamableHTTPError(response.status, `Error POSTing to endpoint: ${text}`);
      }
      const type = (response.headers.get('content-type') ?? '').split(';', 1)[0]!.trim().toLowerCase();
      if (type === 'text/event-stream') message = await readSseResponse(response, id);
      else if (type === 'application/json') message = findResponse(parseBounded(await readBounded(response)), id);
      else {
        await response.body?.cancel().catch(() => {});
        throw new StreamableHTTPError(-1, `Unexpected content type: ${type || '(none)'}`);
      }
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

function resultOf(message: JsonRpcResponse | undefined): CallToolResult {
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
}

/** Keeps a late error of a stream we are done with from becoming an uncaught 'error' event. */
const ignore = (): void => {};

/** Ends a body we do not read; undici's `destroy()` emits an AbortError, which must not go uncaught. */
function discard(body: RawBody): void {
  body.on('error', ignore);
  body.destroy();
}

function header(headers: RawResponse['headers'], name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * The request path's answer: status, then the JSON body or the SSE stream up to our response,
 * read from the Node stream (no web streams). Bounded like the fetch path.
 */
async function readRawResponse(res: RawResponse, id: string): Promise<JsonRpcResponse | undefined> {
  const { statusCode, body } = res;
  if (statusCode < 200 || statusCode > 299) {
    // A 3xx lands here too: redirects are not followed on the call path.
    const text = await readRawText(body, 64 * 1024).catch(() => '');
    throw new StreamableHTTPError(statusCode, `Error POSTing to endpoint: ${text}`);
  }
  const type = (header(res.headers, 'content-type') ?? '').split(';', 1)[0]!.trim().toLowerCase();
  if (type === 'application/json') {
    if (Number(header(res.headers, 'content-length')) > MAX_RESPONSE_BYTES) {
      discard(body);
      throw tooLarge();
    }
    return findResponse(parseBounded(await readRawText(body, MAX_RESPONSE_BYTES)), id);
  }
  if (type === 'text/event-stream') return readRawSse(body, id);
  discard(body);
  throw new StreamableHTTPError(-1, `Unexpected content type: ${type || '(none)'}`);
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

/**
 * Reads an SSE body until the event carrying our response, then drains the rest in the background
 * (so the keep-alive socket is reused). Other messages (progress, logging) are skipped.
 */
function readRawSse(body: RawBody, id: string): Promise<JsonRpcResponse | undefined> {
  return new Promise((resolve, reject) => {
    const decoder = new TextDecoder();
    const scanner = new SseResponseScanner(id);
    let bytes = 0;
    let found: JsonRpcResponse | undefined;
    let drainTimer: NodeJS.Timeout | undefined;
    const finish = (): void => {
      body.removeListener('data', onData);
      body.removeListener('end', onEnd);
      body.removeListener('error', onError);
      body.on('error', ignore);
      if (drainTimer !== undefined) clearTimeout(drainTimer);
    };
    const onData = (chunk: Buffer): void => {
      bytes += chunk.length;
      if (bytes > MAX_RESPONSE_BYTES) {
        finish();
        discard(body);
        if (found === undefined) reject(tooLarge());
        return;
      }
      if (found !== undefined) return; // draining
      const hit = scanner.push(decoder.decode(chunk, { stream: true }));
      if (hit === undefined) return;
      found = hit;
      // A server that keeps the stream open after the response does not get to hold the socket long.
      drainTimer = setTimeout(() => {
        finish();
        discard(body);
      }, 5_000);
      drainTimer.unref();
      resolve(hit);
    };
    const onEnd = (): void => {
      finish();
      if (found === undefined) resolve(undefined);
    };
    const onError = (err: Error): void => {
      finish();
      // After our response, a broken stream loses nothing.
      if (found === undefined) reject(err);
    };
    body.on('data', onData);
    body.on('end', onEnd);
    body.on('error', onError);
  });
}

/**
 * Finds the JSON-RPC response with our id in an SSE stream fed text as it arrives. Other events
 * (progress, logging) are skipped. Only new text can complete an event, so it looks there (and at
 * the 3 characters before it) before touching the whole buffer: a large event arriving in many
 * chunks stays linear.
 */
class SseResponseScanner {
  private buffer = '';
  private tail = '';

  constructor(private readonly id: string) {}

  push(text: string): JsonRpcResponse | undefined {
    const ends = eventEnd(this.tail + text) >= 0;
    this.tail = text.length >= 3 ? text.slice(-3) : (this.tail + text).slice(-3);
    this.buffer += text;
    if (!ends) return undefined;
    let end: number;
    while ((end = eventEnd(this.buffer)) >= 0) {
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end).replace(/^(\r?\n)+/, '');
      const data = eventData(block);
      if (data === undefined) continue;
      let parsed: unknown;
      try {
        parsed = JSON.parse(data);
      } catch {
        continue;
      }
      const found = findResponse(parsed, this.id);
      if (found !== undefined) {
        this.buffer = '';
        return found;
      }
    }
    return undefined;
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
  const scanner = new SseResponseScanner(id);
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
      const found = scanner.push(decoder.decode(value, { stream: true }));
      if (found !== undefined) return found;
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
