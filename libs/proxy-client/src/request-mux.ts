import {
  createInbox,
  errors,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  type Subscription,
} from '@nats-io/transport-node';

/**
 * The client's own request/reply on one connection: one subscription on `<inbox>.*`, each request
 * answered on `<inbox>.<token>` and matched by its token, each with its own timer. nats.js'
 * `request` does the same, but builds an error with a stack trace for every request that succeeds
 * (it rejects its settled promise with `RequestError("cancelled")`) and races two promises per
 * request: a few µs per call on the endpoint's hot path. Failures are nats.js' own classes, as its
 * `request` (without async traces) raises them, so `natsFailure` of the contracts tells them apart:
 * `TimeoutError`; `RequestError` caused by `NoRespondersError`; `ClosedConnectionError` or
 * `DrainingConnectionError` before sending; `RequestError("connection closed")` for a request out
 * when the connection ended; `RequestError` caused by the server's `PermissionViolationError`.
 */

interface Pending {
  subject: string;
  resolve: (msg: Msg) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

/** Options of one request: its timeout (ms, > 0) and headers. */
export interface MuxRequestOptions {
  timeout: number;
  headers?: MsgHdrs | undefined;
}

/** The inbox prefix the connection was made with (a runtime user's own, which its permissions allow). */
function inboxPrefixOf(nc: NatsConnection): string | undefined {
  return (nc as { options?: { inboxPrefix?: string } }).options?.inboxPrefix;
}

export class RequestMux {
  private sub: Subscription | undefined;
  private base = '';
  private seq = 0;
  private readonly pending = new Map<string, Pending>();
  /** Requests of this turn waiting for {@link flushQueued}. */
  private queued: Array<{ token: string; subject: string; data: Uint8Array; headers: MsgHdrs | undefined }> = [];
  private watching = false;

  constructor(private readonly nc: NatsConnection) {}

  /** Number of requests awaiting a reply (tests, metrics). */
  get size(): number {
    return this.pending.size;
  }

  request(subject: string, data: Uint8Array, opts: MuxRequestOptions): Promise<Msg> {
    if (this.nc.isClosed()) return Promise.reject(new errors.ClosedConnectionError());
    if (this.nc.isDraining()) return Promise.reject(new errors.DrainingConnectionError());
    if (!(opts.timeout >= 1)) return Promise.reject(new errors.InvalidArgumentError('timeout: must be greater than 0'));
    return new Promise<Msg>((resolve, reject) => {
      try {
        this.ensureSubscribed();
      } catch (err) {
        reject(err instanceof Error ? err : new Error(String(err)));
        return;
      }
      const token = (this.seq++).toString(36);
      const timer = setTimeout(() => this.fail(token, new errors.TimeoutError()), opts.timeout);
      // Others out: more requests are likely in this turn of the event loop (their HTTP requests
      // arrived together), so this one waits for the turn's end and they leave in one socket write.
      const together = this.pending.size > 0;
      this.pending.set(token, { subject, resolve, reject, timer });
      if (!together) return this.publish(token, subject, data, opts.headers);
      if (this.queued.push({ token, subject, data, headers: opts.headers }) === 1) setImmediate(this.flushQueued);
    });
  }

  /**
   * Publishes the requests made in this turn of the event loop while others were out, in their
   * order (nats.js then writes them to its socket in one write). Before anything else is published
   * for one of them (its cancel), so that the server receives the request first.
   */
  readonly flushQueued = (): void => {
    if (this.queued.length === 0) return;
    const batch = this.queued;
    this.queued = [];
    for (const q of batch) if (this.pending.has(q.token)) this.publish(q.token, q.subject, q.data, q.headers);
  };

  private publish(token: string, subject: string, data: Uint8Array, headers: MsgHdrs | undefined): void {
    try {
      this.nc.publish(subject, data, { reply: this.base + token, ...(headers === undefined ? {} : { headers }) });
    } catch (err) {
      this.fail(token, err as Error);
    }
  }

  private fail(token: string, err: Error): void {
    const p = this.pending.get(token);
    if (p === undefined) return;
    this.pending.delete(token);
    clearTimeout(p.timer);
    p.reject(err);
  }

  private failAll(err: () => Error): void {
    for (const token of [...this.pending.keys()]) this.fail(token, err());
  }

  private onReply(err: Error | null, msg: Msg): void {
    if (err !== null) {
      // The subscription itself failed (a permissions violation): every request out fails with
      // it, and the next request subscribes again.
      this.sub = undefined;
      this.failAll(() => new errors.RequestError(err.message, { cause: err }));
      return;
    }
    const token = msg.subject.slice(this.base.length);
    const p = this.pending.get(token);
    if (p === undefined) return;
    this.pending.delete(token);
    clearTimeout(p.timer);
    if (msg.data.length === 0 && msg.headers?.code === 503) {
      const cause = new errors.NoRespondersError(p.subject);
      p.reject(new errors.RequestError(cause.message, { cause }));
    } else {
      p.resolve(msg);
    }
  }

  private ensureSubscribed(): void {
    if (this.sub !== undefined) return;
    this.base = `${createInbox(inboxPrefixOf(this.nc))}.`;
    const sub = this.nc.subscribe(`${this.base}*`, { callback: (err, msg) => this.onReply(err, msg) });
    this.sub = sub;
    void sub.closed.then(
      () => this.ended(sub),
      () => this.ended(sub),
    );
    this.watchPublishRefusals();
  }

  /** The subscription ended (the connection closed, or it was refused): nothing more will be answered. */
  private ended(sub: Subscription): void {
    if (this.sub !== sub && this.sub !== undefined) return;
    this.sub = undefined;
    this.failAll(() => new errors.RequestError('connection closed'));
  }

  /**
   * A publish the server refused (permissions) fails the request sent to that subject now, as
   * nats.js' request does, rather than at its timeout.
   */
  private watchPublishRefusals(): void {
    if (this.watching) return;
    this.watching = true;
    void (async () => {
      for await (const s of this.nc.status()) {
        if (s.type !== 'error' || !(s.error instanceof errors.PermissionViolationError)) continue;
        const pe = s.error;
        if (pe.operation !== 'publish') continue;
        for (const [token, p] of this.pending) {
          if (p.subject !== pe.subject) continue;
          this.fail(token, new errors.RequestError(pe.message, { cause: pe }));
          break;
        }
      }
    })().catch(() => undefined);
  }
}
