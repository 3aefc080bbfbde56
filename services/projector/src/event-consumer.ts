import { AckPolicy, DeliverPolicy, type ConsumerMessages, type JsMsg } from '@nats-io/jetstream';
import { context } from '@opentelemetry/api';
import type { Bus } from '@mcpx/bus';
import {
  WireError,
  decodeAgentChangedEvent,
  decodeServerDeletedEvent,
  decodeServerDiscoveredEvent,
  type Subjects,
} from '@mcpx/contracts';
import type { Logger } from '@mcpx/log';
import { extractTraceContext } from '@mcpx/telemetry';
import type { Projection } from './projection.js';

/** The durable consumer every projector instance shares (work is split, not duplicated). */
export const PROJECTOR_DURABLE = 'projector';
/** Default time JetStream waits for an ack before it redelivers an event to another instance. */
export const DEFAULT_ACK_WAIT_MS = 30_000;
const RETRY_DELAY_MS = 2_000;

class PoisonMessage extends Error {}

/**
 * Decodes an event strictly (the payload decoders of `@mcpx/contracts`): a refusal is a poison
 * message, whose reason names the rule or field, never the bytes.
 */
function decoded<T>(decode: (bytes: Uint8Array) => T, bytes: Uint8Array): T {
  try {
    return decode(bytes);
  } catch (e) {
    throw new PoisonMessage(e instanceof WireError ? e.message : 'not a valid event');
  }
}

/** Routes one event by its subject (`Subjects.parseServerEvent`, `parseAgentChanged`). */
async function route(projection: Projection, subjects: Subjects, msg: JsMsg): Promise<number> {
  const server = subjects.parseServerEvent(msg.subject);
  if (server?.kind === 'discovered') {
    const e = decoded(decodeServerDiscoveredEvent, msg.data);
    // Nothing changed in the tool list: only a status. The projector has no work.
    if (!e.toolsChanged) return 0;
    return projection.serverDiscovered(e);
  }
  if (server?.kind === 'deleted') return projection.serverDeleted(decoded(decodeServerDeletedEvent, msg.data));
  if (subjects.parseAgentChanged(msg.subject) !== null)
    return projection.agentChanged(decoded(decodeAgentChangedEvent, msg.data));
  throw new PoisonMessage(`unknown subject ${msg.subject}`);
}

/**
 * Consumes MCP_EVENTS with a durable pull consumer, up to `concurrency` events at once. A failed
 * event is `nak`ed with a delay (retryable: the database may be away); a malformed one is
 * `term`ed so it cannot loop forever.
 */
export async function startEventConsumer(opts: {
  bus: Bus;
  projection: Projection;
  log: Logger;
  concurrency: number;
  ackWaitMs?: number;
}): Promise<{ stop(): Promise<void> }> {
  const { bus, projection, log } = opts;
  const stream = bus.subjects.mcpEventsStream;
  const ackWaitMs = opts.ackWaitMs ?? DEFAULT_ACK_WAIT_MS;
  const ACK_WAIT_NS = ackWaitMs * 1e6;
  try {
    const info = await bus.jsm.consumers.info(stream, PROJECTOR_DURABLE);
    if (info.config.ack_wait !== ACK_WAIT_NS)
      await bus.jsm.consumers.update(stream, PROJECTOR_DURABLE, { ack_wait: ACK_WAIT_NS });
  } catch {
    await bus.jsm.consumers
      .add(stream, {
        durable_name: PROJECTOR_DURABLE,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        ack_wait: ACK_WAIT_NS,
        max_ack_pending: 10_000,
        filter_subject: bus.subjects.mcpEventsAll,
      })
      .catch(async (err: unknown) => {
        // Another instance created it first.
        await bus.jsm.consumers.info(stream, PROJECTOR_DURABLE).catch(() => {
          throw err;
        });
      });
  }
  const consumer = await bus.js.consumers.get(stream, PROJECTOR_DURABLE);
  const messages: ConsumerMessages = await consumer.consume({ max_messages: Math.max(opts.concurrency * 2, 16) });
  const inflight = new Set<Promise<void>>();
  const handle = async (msg: JsMsg): Promise<void> => {
    const ctx = extractTraceContext(msg.headers);
    await context.with(ctx, async () => {
      // A large change can outlast ack_wait: tell JetStream the event is still being worked on,
      // so a short ack_wait (fast redelivery after a crash) does not hand it to another instance.
      const heartbeat = setInterval(() => msg.working(), Math.max(250, ackWaitMs / 3));
      try {
        await route(projection, bus.subjects, msg);
        clearInterval(heartbeat);
        msg.ack();
      } catch (err) {
        clearInterval(heartbeat);
        if (err instanceof PoisonMessage) {
          log.error('dropped a malformed event', { subject: msg.subject, reason: err.message });
          msg.term();
        } else {
          log.warn('event failed, will retry', {
            subject: msg.subject,
            err: err as Error,
            redelivered: msg.info.deliveryCount,
          });
          msg.nak(RETRY_DELAY_MS);
        }
      }
    });
  };
  const loop = (async () => {
    for await (const msg of messages) {
      const p = handle(msg).finally(() => inflight.delete(p));
      inflight.add(p);
      if (inflight.size >= opts.concurrency) await Promise.race(inflight);
    }
  })();
  return {
    stop: async () => {
      await messages.close();
      await loop.catch(() => undefined);
      await Promise.allSettled([...inflight]);
    },
  };
}
