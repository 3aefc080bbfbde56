import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { InboundLimits } from '@mcpx/config';
import type { Meter } from '@opentelemetry/api';
import { BodyBudget } from './budget.js';
import { capConnections, plainAddress } from './connection-cap.js';
import { RefusalLog, type WarnLogger } from './refusal-log.js';
import { InboundReason, refusal, type InboundRefusal } from './refusals.js';

/** A socket whose answer was written before its body was read is closed within this (lingering close). */
const LINGER_MS = 1_000;
/** Node's own request deadline, a backstop over the headers and body deadlines. */
const BACKSTOP_MS = 5_000;
/** The share of the budget one peer address may hold. */
const ADDRESS_SHARE = 4;

export interface InboundGuardOptions {
  limits: InboundLimits;
  /**
   * Writes a refusal in the face's own error shape (`refusal.status`; the guard has already set
   * `connection: close` and, on 503, `retry-after`). Called once per refused request.
   */
  answer: (req: IncomingMessage, res: ServerResponse, refusal: InboundRefusal) => void;
  /** Peer addresses whose sockets are not capped (trusted proxies: they carry many clients each). */
  exempt?: (address: string) => boolean;
  /** `mcpx_inbound_refused_total{reason}` and `mcpx_inbound_buffered_bytes`. */
  meter?: Meter;
  /** One line per 10 s at most, with the refusals counted by reason. */
  log?: WarnLogger;
}

/** Whether a request carries a body (a length above 0, or chunked). */
export function hasBody(req: IncomingMessage): boolean {
  if (req.headers['transfer-encoding'] !== undefined) return true;
  const n = Number(req.headers['content-length'] ?? 0);
  return !Number.isFinite(n) || n > 0;
}

/**
 * The bounds of one public HTTP face on what a client may hold before anyone knows who it is
 * (README): the headers and body deadlines, idle keep-alive sockets, a per-process budget of
 * buffered body bytes, open sockets per peer address. A face `attach`es it to its server, calls
 * `admit` first in its request handler, checks whatever the headers tell (Host, Origin, the
 * credential, the route) and answers refusals unread, then `read`s the body.
 */
export class InboundGuard {
  readonly budget: BodyBudget;
  private refusedSockets = new WeakSet<Socket>();
  /** The reader of a request's body, cut when its deadline passes. */
  private readonly readers = new WeakMap<IncomingMessage, () => void>();
  private readonly counted?: (reason: InboundReason) => void;
  private readonly refusals: RefusalLog | undefined;

  constructor(private readonly opts: InboundGuardOptions) {
    this.budget = new BodyBudget(opts.limits.bodyBudgetBytes, Math.floor(opts.limits.bodyBudgetBytes / ADDRESS_SHARE));
    this.refusals = opts.log !== undefined ? new RefusalLog(opts.log) : undefined;
    if (opts.meter !== undefined) {
      const refused = opts.meter.createCounter('mcpx_inbound_refused_total', {
        description:
          'Requests and connections refused before their body was in, by reason (deadline, budget, connections, too_large)',
      });
      const gauge = opts.meter.createObservableGauge('mcpx_inbound_buffered_bytes', {
        unit: 'By',
        description: 'Bytes of request bodies buffered now, across all requests of the process',
      });
      gauge.addCallback((r) => r.observe(this.budget.buffered));
      this.counted = (reason) => refused.add(1, { reason });
    }
  }

  /**
   * Options for `createServer`: how often Node looks for requests past their headers or request
   * deadline (its default, 30 s, would let a stalled header live that much longer).
   */
  static readonly serverOptions = { connectionsCheckingInterval: 1_000 } as const;

  /** Sets the server's deadlines and caps its sockets per peer address. */
  attach(server: Server): void {
    const l = this.opts.limits;
    server.headersTimeout = l.headersTimeoutMs;
    // Node's whole-request deadline (408) as a backstop; a response may stream for as long as it likes.
    server.requestTimeout = l.headersTimeoutMs + l.bodyTimeoutMs + BACKSTOP_MS;
    server.keepAliveTimeout = l.keepAliveTimeoutMs;
    this.refusedSockets = capConnections(server, {
      perAddress: l.connectionsPerAddress,
      exempt: this.opts.exempt ?? (() => false),
      onRefused: () => this.count(InboundReason.connections),
    });
  }

  /**
   * The first step of a request: false when its socket is over its address's cap (it is closed;
   * do nothing more). Otherwise the body deadline starts, and a response finished before the
   * body was read closes the connection instead of keeping a half-read one alive.
   */
  admit(req: IncomingMessage, res: ServerResponse): boolean {
    const socket = req.socket;
    if (this.refusedSockets.has(socket)) {
      socket.destroy();
      return false;
    }
    if (!hasBody(req)) return true;
    const timer = setTimeout(() => this.expire(req, res), this.opts.limits.bodyTimeoutMs);
    const stop = (): void => clearTimeout(timer);
    req.once('end', stop);
    res.once('close', stop);
    res.once('finish', () => {
      if (!req.complete) linger(req, socket);
    });
    return true;
  }

  /**
   * The body, at most `maxBytes`, charged to the budget while it arrives; undefined when it was
   * refused (answered already: 413, 503, or 408 at the deadline) or the client went away.
   */
  read(req: IncomingMessage, res: ServerResponse, maxBytes: number): Promise<Buffer | undefined> {
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > maxBytes)
      return this.refused(req, res, refusal('too_large', { name: 'maxBodyBytes', limit: maxBytes }));
    const peer = plainAddress(req.socket.remoteAddress);
    // A trusted proxy's socket carries many clients: it counts against the whole budget only.
    const address = this.opts.exempt?.(peer) === true ? undefined : peer;
    if (this.budget.full(address)) return this.refused(req, res, this.overBudget());
    return new Promise((resolve) => {
      const chunks: Buffer[] = [];
      let size = 0;
      let done = false;
      const finish = (body: Buffer | undefined): void => {
        if (done) return;
        done = true;
        this.budget.give(size, address);
        this.readers.delete(req);
        req.off('data', onData);
        resolve(body);
      };
      const onData = (chunk: Buffer): void => {
        const over =
          size + chunk.length > maxBytes ? refusal('too_large', { name: 'maxBodyBytes', limit: maxBytes }) : undefined;
        const taken = over === undefined && this.budget.take(chunk.length, address);
        if (!taken) {
          finish(undefined);
          this.refuse(req, res, over ?? this.overBudget());
          return;
        }
        size += chunk.length;
        chunks.push(chunk);
      };
      this.readers.set(req, () => finish(undefined));
      req.on('data', onData);
      req.once('end', () => finish(Buffer.concat(chunks, size)));
      req.once('close', () => finish(undefined));
      req.once('error', () => finish(undefined));
    });
  }

  private overBudget(): InboundRefusal {
    return refusal('budget', { name: 'bodyBudgetBytes', limit: this.budget.limit });
  }

  private refused(req: IncomingMessage, res: ServerResponse, r: InboundRefusal): Promise<undefined> {
    this.refuse(req, res, r);
    return Promise.resolve(undefined);
  }

  /** The body deadline passed: its reader is cut, the client told 408 (when nothing was answered yet) and the socket closed. */
  private expire(req: IncomingMessage, res: ServerResponse): void {
    if (req.complete) return;
    this.readers.get(req)?.();
    this.refuse(req, res, refusal('deadline', { name: 'bodyTimeoutMs', limit: this.opts.limits.bodyTimeoutMs }));
  }

  private refuse(req: IncomingMessage, res: ServerResponse, r: InboundRefusal): void {
    this.count(r.reason);
    if (res.headersSent || res.writableEnded) {
      req.socket.destroy();
      return;
    }
    res.setHeader('connection', 'close');
    if (r.retryAfterSeconds !== undefined) res.setHeader('retry-after', String(r.retryAfterSeconds));
    this.opts.answer(req, res, r);
  }

  private count(reason: InboundReason): void {
    try {
      this.counted?.(reason);
    } catch {
      // A metric must never break the answer it reports on.
    }
    this.refusals?.add(reason);
  }
}

/**
 * Closes a socket whose request body was not read: its answer is out, the write side ends (the
 * client reads the answer and then the end), what it still sends is discarded unbuffered, and the
 * socket is destroyed within {@link LINGER_MS} whatever it does.
 */
function linger(req: IncomingMessage, socket: Socket): void {
  if (socket.destroyed) return;
  req.resume();
  socket.end();
  setTimeout(() => socket.destroy(), LINGER_MS).unref();
}
