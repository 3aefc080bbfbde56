import {
  createInbox,
  headers,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  type Subscription,
} from '@nats-io/transport-node';
import { encodePayload } from '@mcpx/contracts';

/** One JetStream message to publish: its subject, payload and de-duplication id. */
export interface OutgoingEvent {
  subject: string;
  payload: unknown;
  msgId: string;
}

export interface JetStreamPublisherOptions {
  /** Messages awaiting their PubAck at once. */
  window?: number;
  /** How long a message may wait for its PubAck before it is sent again. */
  ackTimeoutMs?: number;
  /** Sends of one message before the batch fails. */
  attempts?: number;
  /**
   * Where a failed PubAck subscription is reported (a permissions violation: the inbox is not under
   * the user's prefix). Then every batch fails by timeout; this says why.
   */
  log?: { error(msg: string, fields?: Record<string, unknown>): void };
}

/** A batch could not be stored by JetStream; the caller retries the whole event later. */
export class PublishError extends Error {
  override readonly name = 'PublishError';
}

interface Batch {
  open: number;
  failure: PublishError | null;
}

interface Waiting {
  event: OutgoingEvent;
  data: Uint8Array;
  trace: MsgHdrs;
  batch: Batch;
  attempt: number;
  timer: NodeJS.Timeout | undefined;
}

/**
 * The one JetStream publisher of the services (the registry's outbox through `Bus.publishEvent`,
 * the projector's change log through `publishAll`): every message carries its `Nats-Msg-Id`, so a
 * retried publish within the stream's duplicate window is stored once. Publishes batches of
 * JetStream messages and resolves once JetStream has acknowledged every one.
 *
 * `js.publish` costs a request (with its own timer and promise) per message, which caps a 2-core
 * box at about 17,000 messages/s. This sends plain publishes whose reply subject is one inbox
 * subscription and counts the PubAcks, several thousand in flight: about 4× faster. A message that
 * gets an error, no responder or no PubAck in time is sent again with the same `Nats-Msg-Id`, so
 * JetStream stores it once.
 *
 * The PubAck inbox is made under the connection's own inbox prefix (`Bus.inboxPrefix`): under least
 * privilege the projector may subscribe to `_INBOX_<user>.>` and nothing else, so an inbox in the
 * default `_INBOX.` space would be refused (and would let others read its PubAcks).
 */
export class JetStreamPublisher {
  private readonly inbox: string;
  private readonly sub: Subscription;
  private readonly waiting = new Map<number, Waiting>();
  private readonly window: number;
  private readonly ackTimeoutMs: number;
  private readonly attempts: number;
  private seq = 0;
  private waiters: Array<() => void> = [];

  constructor(
    private readonly nc: NatsConnection,
    /** The connection's inbox prefix (`Bus.inboxPrefix`). */
    inboxPrefix: string,
    private readonly traceHeaders: () => MsgHdrs,
    opts: JetStreamPublisherOptions = {},
  ) {
    this.inbox = createInbox(inboxPrefix);
    this.window = opts.window ?? 5_000;
    this.ackTimeoutMs = opts.ackTimeoutMs ?? 5_000;
    this.attempts = opts.attempts ?? 3;
    const log = opts.log;
    this.sub = nc.subscribe(`${this.inbox}.*`, {
      callback: (err, msg) => {
        if (err) log?.error('PubAck subscription failed', { err });
        else this.onReply(msg);
      },
    });
  }

  /** Publishes every event; resolves when all are stored, throws PublishError if one cannot be. */
  async publishAll(events: readonly OutgoingEvent[]): Promise<void> {
    if (events.length === 0) return;
    const batch: Batch = { open: 0, failure: null };
    const trace = this.traceHeaders();
    for (const event of events) {
      // Batches of concurrent callers share the window.
      while (this.waiting.size >= this.window && batch.failure === null) await this.settled();
      if (batch.failure !== null) break;
      batch.open++;
      this.send(++this.seq, { event, data: encodePayload(event.payload), trace, batch, attempt: 0, timer: undefined });
    }
    while (batch.open > 0 && batch.failure === null) await this.settled();
    if (batch.failure !== null) throw batch.failure;
  }

  close(): void {
    for (const w of this.waiting.values()) clearTimeout(w.timer);
    this.waiting.clear();
    this.sub.unsubscribe();
    this.wake();
  }

  private send(id: number, w: Waiting): void {
    const h = headers();
    for (const [k, v] of w.trace) for (const value of v) h.append(k, value);
    h.set('Nats-Msg-Id', w.event.msgId);
    w.attempt++;
    w.timer = setTimeout(() => this.retry(id, 'no PubAck in time'), this.ackTimeoutMs);
    this.waiting.set(id, w);
    this.nc.publish(w.event.subject, w.data, { reply: `${this.inbox}.${id}`, headers: h });
  }

  private onReply(msg: Msg): void {
    const id = Number(msg.subject.slice(this.inbox.length + 1));
    const w = this.waiting.get(id);
    if (w === undefined) return;
    let error: string | null = null;
    if (msg.headers?.hasError === true || msg.data.length === 0)
      error = `no stream answered (${msg.headers?.code ?? 'empty reply'})`;
    else {
      // Parsed defensively: this runs in a subscription callback, where a throw would close the
      // projector's NATS connection. Anything but a PubAck object counts as a failed publish.
      let ack: { error?: { description?: unknown } } | null = null;
      try {
        const parsed: unknown = JSON.parse(new TextDecoder().decode(msg.data));
        if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) ack = parsed;
      } catch {
        ack = null;
      }
      if (ack === null) error = 'malformed PubAck';
      else if (ack.error !== undefined)
        error = typeof ack.error?.description === 'string' ? ack.error.description : 'JetStream refused the message';
    }
    if (error !== null) return this.retry(id, error);
    clearTimeout(w.timer);
    this.waiting.delete(id);
    w.batch.open--;
    this.wake();
  }

  /** Sends again under the same id (a late PubAck of an earlier send counts: same Nats-Msg-Id). */
  private retry(id: number, reason: string): void {
    const w = this.waiting.get(id);
    if (w === undefined) return;
    clearTimeout(w.timer);
    if (w.attempt >= this.attempts || w.batch.failure !== null) {
      this.waiting.delete(id);
      w.batch.open--;
      w.batch.failure ??= new PublishError(`could not publish ${w.event.subject}: ${reason}`);
    } else {
      this.send(id, w);
    }
    this.wake();
  }

  private settled(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const fn of waiters) fn();
  }
}
