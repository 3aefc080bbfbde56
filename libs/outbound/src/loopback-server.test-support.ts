/**
 * Test support (not exported): real HTTP servers on loopback that answer with large, compressed
 * or endless bodies generated as they are sent, never held in memory.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createBrotliCompress, createDeflate, createGzip } from 'node:zlib';
import type { Transform } from 'node:stream';
import { afterEach } from 'vitest';
import { createOutboundFetch, type OutboundFetch, type OutboundFetchOptions } from './outbound-fetch.js';
import type { OutboundPolicy } from './policy.js';

export type Encoding = 'identity' | 'gzip' | 'deflate' | 'br';

export interface Sent {
  /** Bytes handed to the encoder (decompressed size) so far. */
  produced: number;
  /** The response was closed before it finished (the client went away). */
  aborted: boolean;
  /** Resolves when the response is closed, finished or not. */
  closed: Promise<void>;
}

export interface LoopbackServer {
  origin: string;
  /** One entry per response, in order. */
  sent: Sent[];
  close(): Promise<void>;
}

export type Handler = (req: IncomingMessage, res: ServerResponse, sent: Sent) => void;

export async function startLoopback(handle: Handler): Promise<LoopbackServer> {
  const sent: Sent[] = [];
  const server = createServer((req, res) => {
    let done!: () => void;
    const entry: Sent = { produced: 0, aborted: false, closed: new Promise<void>((r) => (done = r)) };
    sent.push(entry);
    res.once('close', () => {
      entry.aborted = !res.writableFinished;
      done();
    });
    // Read the request body before answering, as a server would.
    req.resume();
    req.once('end', () => handle(req, res, entry));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    sent,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function encoder(encoding: Exclude<Encoding, 'identity'>): Transform {
  if (encoding === 'gzip') return createGzip({ level: 9 });
  if (encoding === 'deflate') return createDeflate({ level: 9 });
  return createBrotliCompress();
}

/**
 * Sends `total` bytes of `fill` (Infinity: without end) through `encoding`, respecting
 * backpressure, and stops as soon as the client goes away. `chunk` bytes per write.
 */
export function sendGenerated(
  res: ServerResponse,
  sent: Sent,
  opts: { encoding: Encoding; total: number; fill?: string; chunk?: number; headers?: Record<string, string> },
): void {
  const size = opts.chunk ?? 64 * 1024;
  const block = Buffer.alloc(size, opts.fill ?? 'x');
  res.writeHead(200, {
    'content-type': 'application/json',
    ...(opts.encoding === 'identity' ? {} : { 'content-encoding': opts.encoding }),
    ...opts.headers,
  });
  const sink = opts.encoding === 'identity' ? res : encoder(opts.encoding);
  if (sink !== res) (sink as Transform).pipe(res);
  let stopped = false;
  res.once('close', () => {
    stopped = true;
    if (sink !== res) (sink as Transform).destroy();
  });
  const pump = (): void => {
    while (!stopped && sent.produced < opts.total) {
      const n = Math.min(size, opts.total - sent.produced);
      sent.produced += n;
      if (!sink.write(n === size ? block : block.subarray(0, n))) {
        sink.once('drain', pump);
        return;
      }
    }
    if (!stopped) sink.end();
  };
  pump();
}

/** Writes `text` again and again (an endless event stream) until the client goes away; `headers: null` when already sent. */
export function sendRepeated(
  res: ServerResponse,
  sent: Sent,
  text: string,
  headers: Record<string, string> | null = { 'content-type': 'text/event-stream' },
): void {
  if (headers !== null) res.writeHead(200, headers);
  const block = Buffer.from(text.repeat(Math.max(1, Math.floor((16 * 1024) / text.length))));
  let stopped = false;
  res.once('close', () => (stopped = true));
  const pump = (): void => {
    while (!stopped) {
      sent.produced += block.length;
      if (!res.write(block)) {
        res.once('drain', pump);
        return;
      }
    }
  };
  pump();
}

/** The error a promise rejects with (fails the test if it resolves). */
export async function rejection(promise: Promise<unknown>): Promise<Error> {
  const resolved = new Error('expected a rejection');
  const err = await promise.then(
    () => resolved,
    (e: unknown) => e,
  );
  if (!(err instanceof Error) || err === resolved) throw err;
  return err;
}

/** The policy under test: production, with the loopback servers' own address let through. */
export const LOOPBACK_POLICY: OutboundPolicy = {
  profile: 'production',
  allowHttpHosts: ['127.0.0.1'],
  allowPrivate: ['127.0.0.1/32'],
};

export interface PerTest {
  /** A loopback server answering with `handle`, closed after the test. */
  serve: (handle: Handler) => Promise<LoopbackServer>;
  /** An outbound fetch under {@link LOOPBACK_POLICY}, closed after the test. */
  outbound: (opts?: OutboundFetchOptions) => OutboundFetch;
  /** What runs after each test, last added first; a test adds its own. */
  cleanups: Array<() => Promise<void> | void>;
}

/** Servers and fetches a test file makes, each closed after the test that made it (registers an `afterEach`). */
export function perTest(): PerTest {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });
  return {
    cleanups,
    serve: async (handle) => {
      const s = await startLoopback(handle);
      cleanups.push(() => s.close());
      return s;
    },
    outbound: (opts = {}) => {
      const f = createOutboundFetch(LOOPBACK_POLICY, opts);
      cleanups.push(() => f.close());
      return f;
    },
  };
}
