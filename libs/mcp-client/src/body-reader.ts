import type { RawBody, RawResponse } from './http-request.js';
import { McpClientError, McpClientErrorCode } from './errors.js';

/**
 * Reading the answer to a `tools/call` off the wire (either era, and a legacy resumption): one
 * reader per body kind, both on the Node stream of an `McpHttpRequest`: {@link readJsonBody}
 * for `application/json` and {@link readSseResponse} for `text/event-stream`. Bounded, and never
 * parsing more than the events that could be our response.
 */

/** A response bigger than this is refused: a remote server's answer is untrusted. A resumed call counts all its streams. */
export const MAX_RESPONSE_BYTES = 32 * 1024 * 1024;

export interface JsonRpcResponse {
  id?: unknown;
  result?: unknown;
  error?: { code?: unknown; message?: unknown; data?: unknown };
}

/** A message on a response stream that is not a response: a notification (progress, logging) or a server's request. */
export interface JsonRpcOther {
  method: string;
  id?: unknown;
  params?: unknown;
}

export function findResponse(data: unknown, id: string): JsonRpcResponse | undefined {
  const list = Array.isArray(data) ? data : [data];
  for (const m of list) {
    if (m !== null && typeof m === 'object' && (m as JsonRpcResponse).id === id) return m as JsonRpcResponse;
  }
  return undefined;
}

export function tooLarge(): McpClientError {
  return new McpClientError(
    McpClientErrorCode.TransportError,
    `MCP response is larger than ${MAX_RESPONSE_BYTES} bytes`,
    { transport: 'http' },
  );
}

/** Keeps a late error of a stream we are done with from becoming an uncaught 'error' event. */
export const ignore = (): void => {};

/** Ends a body we do not read; undici's `destroy()` emits an AbortError, which must not go uncaught. */
export function discard(body: RawBody): void {
  body.on('error', ignore);
  body.destroy();
}

export function header(headers: RawResponse['headers'], name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** The media type of a `content-type` value, lower-cased, without parameters. */
export function mediaType(value: string | null | undefined): string {
  return (value ?? '').split(';', 1)[0]!.trim().toLowerCase();
}

/**
 * Finds the JSON-RPC response with our id in an SSE stream fed text as it arrives. Other events
 * (progress, logging, priming events without data) are skipped. Only new text can complete an
 * event, so it looks there (and at the 3 characters before it) before touching the whole buffer: a
 * large event arriving in many chunks stays linear.
 *
 * It also keeps what a resumption needs (the last event id, the server's `retry`) and the bytes
 * read, over all the streams of one call.
 */
export class SseResponseScanner {
  /** The SSE "last event ID": the `id:` of the latest complete event (an empty `id:` clears it). */
  lastEventId: string | undefined;
  /** The server's reconnection time (`retry:`, in ms), when it sent one. */
  retryMs: number | undefined;
  /** Bytes read on all of the call's streams: the response bound is for the whole call. */
  bytes = 0;
  private buffer = '';
  private tail = '';

  /** `onOther` is told of every other message on the stream (e.g. `notifications/progress`). */
  constructor(
    readonly id: string,
    private readonly onOther?: (message: JsonRpcOther) => void,
  ) {}

  /** A new stream (a resumption) begins: the unfinished event of the broken one is dropped, as SSE does. */
  restart(): void {
    this.buffer = '';
    this.tail = '';
  }

  push(text: string): JsonRpcResponse | undefined {
    const ends = eventEnd(this.tail + text) >= 0;
    this.tail = text.length >= 3 ? text.slice(-3) : (this.tail + text).slice(-3);
    this.buffer += text;
    if (!ends) return undefined;
    let end: number;
    while ((end = eventEnd(this.buffer)) >= 0) {
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end).replace(/^(\r?\n)+/, '');
      const data = this.eventData(block);
      // A priming event (an id, maybe a retry, and empty data) carries no message.
      if (data === undefined || data === '') continue;
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
      if (this.onOther !== undefined) this.tellOthers(parsed);
    }
    return undefined;
  }

  private tellOthers(parsed: unknown): void {
    for (const m of Array.isArray(parsed) ? parsed : [parsed]) {
      if (m === null || typeof m !== 'object' || typeof (m as JsonRpcOther).method !== 'string') continue;
      try {
        this.onOther?.(m as JsonRpcOther);
      } catch {
        // An observer's failure must not break the call.
      }
    }
  }

  /** The joined `data:` lines of an event whose type is `message` (or unset); notes its `id:` and `retry:`. */
  private eventData(block: string): string | undefined {
    let data: string | undefined;
    let message = true;
    for (const raw of block.split('\n')) {
      const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
      if (line.startsWith('data:')) {
        const v = fieldValue(line, 5);
        data = data === undefined ? v : `${data}\n${v}`;
      } else if (line.startsWith('event:')) {
        const ev = line.slice(6).trim();
        if (ev !== '' && ev !== 'message') message = false;
      } else if (line.startsWith('id:')) {
        const v = fieldValue(line, 3);
        // SSE ignores an id containing NUL; an empty one clears the last event id.
        if (!v.includes('\0')) this.lastEventId = v === '' ? undefined : v;
      } else if (line.startsWith('retry:')) {
        const v = fieldValue(line, 6);
        if (/^\d{1,9}$/.test(v)) this.retryMs = Number(v);
      }
    }
    return message ? data : undefined;
  }
}

/** A field's value: the text after the colon at `colon + 1`, less one leading space. */
function fieldValue(line: string, afterColon: number): string {
  return line.charCodeAt(afterColon) === 32 ? line.slice(afterColon + 1) : line.slice(afterColon);
}

/** Index just past an event's last line (the blank line that ends it), or -1. */
function eventEnd(buffer: string): number {
  const lf = buffer.indexOf('\n\n');
  const crlf = buffer.indexOf('\r\n\r\n');
  if (lf < 0) return crlf < 0 ? -1 : crlf + 2;
  if (crlf < 0) return lf + 1;
  return Math.min(lf + 1, crlf + 2);
}

/**
 * Reads a JSON body whole (bounded at {@link MAX_RESPONSE_BYTES}, a declared larger length is
 * refused before reading) and parses it; malformed JSON is a `transport_error`.
 */
export async function readJsonBody(res: RawResponse): Promise<unknown> {
  if (Number(header(res.headers, 'content-length')) > MAX_RESPONSE_BYTES) {
    discard(res.body);
    throw tooLarge();
  }
  const text = await readText(res.body, MAX_RESPONSE_BYTES);
  try {
    return JSON.parse(text);
  } catch {
    throw new McpClientError(McpClientErrorCode.TransportError, 'MCP server answered with malformed JSON', {
      transport: 'http',
    });
  }
}

/** The start of an error body (at most `limit` bytes, cut there), never failing. */
export async function readErrorText(body: RawBody, limit = 64 * 1024): Promise<string> {
  return await readText(body, limit, true).catch(() => '');
}

/** The whole body as text; more than `limit` bytes destroys the stream and fails (or, with `cut`, ends the text there). */
function readText(body: RawBody, limit: number, cut = false): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    const done = (): string =>
      chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8');
    const onData = (chunk: Buffer): void => {
      bytes += chunk.length;
      if (bytes > limit) {
        cleanup();
        discard(body);
        if (cut) {
          chunks.push(chunk.subarray(0, chunk.length - (bytes - limit)));
          resolve(done());
        } else reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      cleanup();
      resolve(done());
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
 * Reads an SSE body (Node stream) until the event carrying our response, then drains the rest in
 * the background (so the keep-alive socket is reused). Resolves `undefined` when the stream ends
 * first; rejects when it breaks first.
 */
export function readSseResponse(body: RawBody, scanner: SseResponseScanner): Promise<JsonRpcResponse | undefined> {
  return new Promise((resolve, reject) => {
    const decoder = new TextDecoder();
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
      scanner.bytes += chunk.length;
      if (scanner.bytes > MAX_RESPONSE_BYTES) {
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
