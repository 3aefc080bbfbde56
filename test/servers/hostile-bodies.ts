/**
 * The bodies a hostile MCP server answers with, generated as they are sent (never held in
 * memory) and sent only as fast as the client reads them (backpressure): a client that stops
 * reading stops the generator; one that reads on is fed forever.
 */
import type { ServerResponse } from 'node:http';
import { createGzip } from 'node:zlib';
import type { Writable } from 'node:stream';

/** The attacks, by the shape of the body. */
export const HostileBody = {
  /** `application/json`, gzip: about 10 MiB on the wire that inflate to 10 GiB (a JSON string of spaces). */
  gzipBomb: 'gzip-bomb',
  /** `text/event-stream`, gzip: an event whose `data:` line inflates without end. */
  gzipSseBomb: 'gzip-sse-bomb',
  /** `text/event-stream`: a `data:` line that never ends (no newline, ever). */
  endlessLine: 'endless-line',
  /** `text/event-stream`: small, valid notifications without end. */
  endlessEvents: 'endless-events',
  /** `application/json` declaring a 10 GiB Content-Length, then a trickle. */
  hugeContentLength: 'huge-content-length',
} as const;
export type HostileBody = (typeof HostileBody)[keyof typeof HostileBody];

/** What the server saw of one hostile answer. */
export interface HostileSend {
  body: HostileBody;
  /** Bytes generated so far (before compression). */
  generated: number;
  /** The client went away before the body ended (it always should: these bodies do not end). */
  cancelled: boolean;
  /** Resolves when the response is closed. */
  closed: Promise<void>;
}

const GiB = 1024 * 1024 * 1024;
const BLOCK = 1024 * 1024;

/** Writes `next()` blocks into `sink` while it drains, until `total` bytes or the response closes. */
function pump(res: ServerResponse, sink: Writable, send: HostileSend, next: () => Buffer, total = Infinity): void {
  let stopped = false;
  res.once('close', () => {
    stopped = true;
    if (sink !== res) sink.destroy();
  });
  const go = (): void => {
    while (!stopped && send.generated < total) {
      const block = next();
      send.generated += block.length;
      if (!sink.write(block)) {
        sink.once('drain', go);
        return;
      }
    }
    if (!stopped) sink.end();
  };
  go();
}

function gzipTo(res: ServerResponse): Writable {
  const gz = createGzip({ level: 9 });
  gz.pipe(res);
  return gz;
}

/**
 * Answers `res` with `body`. `id` is the JSON-RPC id being answered (the bomb starts as its
 * answer, so a client reads it as one); `sse` whether the request was a GET stream.
 */
export function sendHostile(res: ServerResponse, body: HostileBody, id: unknown): HostileSend {
  let closed!: () => void;
  const send: HostileSend = { body, generated: 0, cancelled: false, closed: new Promise<void>((r) => (closed = r)) };
  res.once('close', () => {
    send.cancelled = !res.writableFinished;
    closed();
  });
  const spaces = Buffer.alloc(BLOCK, ' ');
  const xs = Buffer.alloc(BLOCK, 'x');
  switch (body) {
    case HostileBody.gzipBomb: {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      const sink = gzipTo(res);
      const head = Buffer.from(`{"jsonrpc":"2.0","id":${JSON.stringify(id ?? null)},"result":{"tools":[],"padding":"`);
      let first = true;
      pump(res, sink, send, () => (first ? ((first = false), head) : spaces), 10 * GiB);
      break;
    }
    case HostileBody.gzipSseBomb: {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' });
      const sink = gzipTo(res);
      let first = true;
      pump(res, sink, send, () => (first ? ((first = false), Buffer.from('event: message\ndata: ')) : spaces), 10 * GiB);
      break;
    }
    case HostileBody.endlessLine: {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let first = true;
      pump(res, res, send, () => (first ? ((first = false), Buffer.from('event: message\ndata: ')) : xs));
      break;
    }
    case HostileBody.endlessEvents: {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const event = `event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'x'.repeat(400) } })}\n\n`;
      const block = Buffer.from(event.repeat(Math.floor((64 * 1024) / event.length)));
      pump(res, res, send, () => block);
      break;
    }
    case HostileBody.hugeContentLength: {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(10 * GiB) });
      // A trickle: the body would take forever; a client that waits for it never returns.
      res.write(`{"jsonrpc":"2.0","id":${JSON.stringify(id ?? null)},"result":{"tools":[`);
      send.generated = 64;
      const timer = setInterval(() => res.write(' '), 1_000);
      res.once('close', () => clearInterval(timer));
      break;
    }
  }
  return send;
}
