import { connect, headers, type Msg, type MsgHdrs, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, RetentionPolicy, StorageType, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { WireError, decodePayload, encodePayload, makeSubjects, toWireError, type Subjects, type WireErrorShape } from '@mcpx/contracts';
import { extractTraceContext, injectTraceHeaders } from '@mcpx/telemetry';
import { context, type Context } from '@opentelemetry/api';

/** The reply of every request/reply endpoint but the proxy's call (which adds its instance). */
export type Reply<T> = { ok: true; value: T } | { ok: false; error: WireErrorShape };

export interface Bus {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  subjects: Subjects;
  /** Publishes a CBOR event on JetStream with trace headers; `msgId` makes a retry a no-op. */
  publishEvent(subject: string, payload: unknown, msgId?: string): Promise<void>;
  /** Headers carrying the active trace context. */
  traceHeaders(): MsgHdrs;
  /** Sends a request and returns its value, or throws the typed error the responder sent. */
  request<T>(subject: string, payload: unknown, timeoutMs?: number): Promise<T>;
  /**
   * Answers requests on a subject (in a queue group) with `handler`'s value or typed error. The
   * handler runs in the trace context the request carried.
   */
  serve<Req, Res>(subject: string, queue: string, handler: (req: Req, msg: Msg, ctx: Context) => Promise<Res>): Subscription;
  close(): Promise<void>;
}

/** How long JetStream remembers message ids for de-duplication of retried publishes. */
const DUPLICATE_WINDOW_NS = 2 * 60 * 1_000_000_000;

/** Creates the streams if they are missing; safe to call from every instance on start. */
export async function ensureStreams(jsm: JetStreamManager, subjects: Subjects): Promise<void> {
  const specs = [
    { name: subjects.mcpEventsStream, subjects: [subjects.mcpEventsAll], max_age: 7 * 24 * 3600 * 1e9 },
    { name: subjects.agentToolsStream, subjects: [subjects.agentToolsChangedAll()], max_age: 24 * 3600 * 1e9 },
  ];
  for (const spec of specs) {
    try {
      await jsm.streams.info(spec.name);
    } catch {
      try {
        await jsm.streams.add({
          name: spec.name,
          subjects: spec.subjects,
          retention: RetentionPolicy.Limits,
          storage: StorageType.File,
          max_age: spec.max_age,
          duplicate_window: DUPLICATE_WINDOW_NS,
        });
      } catch (err) {
        // Another instance may have created it between our info and add.
        await jsm.streams.info(spec.name).catch(() => {
          throw err;
        });
      }
    }
  }
}

export async function connectBus(opts: { url: string; name: string; prefix?: string }): Promise<Bus> {
  const nc = await connect({ servers: opts.url, name: opts.name, maxReconnectAttempts: -1 });
  const subjects = makeSubjects(opts.prefix ?? '');
  const jsm = await jetstreamManager(nc);
  await ensureStreams(jsm, subjects);
  const js = jetstream(nc);
  const traceHeaders = (): MsgHdrs => injectTraceHeaders(headers());
  return {
    nc,
    js,
    jsm,
    subjects,
    traceHeaders,
    publishEvent: async (subject, payload, msgId) => {
      await js.publish(subject, encodePayload(payload), { headers: traceHeaders(), ...(msgId ? { msgID: msgId } : {}) });
    },
    request: async <T>(subject: string, payload: unknown, timeoutMs = 10_000): Promise<T> => {
      const msg = await nc.request(subject, encodePayload(payload), { timeout: timeoutMs, headers: traceHeaders() });
      const reply = decodePayload<Reply<T>>(msg.data);
      if (reply.ok) return reply.value;
      throw WireError.from(reply.error);
    },
    serve: <Req, Res>(subject: string, queue: string, handler: (req: Req, msg: Msg, ctx: Context) => Promise<Res>) =>
      nc.subscribe(subject, {
        queue,
        callback: (err, msg) => {
          if (err) return;
          const ctx = extractTraceContext(msg.headers);
          void context.with(ctx, async () => {
            let reply: Reply<Res>;
            try {
              let req: Req;
              try {
                req = decodePayload<Req>(msg.data);
              } catch {
                throw new WireError('invalid_input', 'payload: not a CBOR message', { field: 'payload' });
              }
              reply = { ok: true, value: await handler(req, msg, ctx) };
            } catch (e) {
              reply = { ok: false, error: toWireError(e).toJSON() };
            }
            msg.respond(encodePayload(reply));
          });
        },
      }),
    close: async () => {
      await nc.drain().catch(() => nc.close());
    },
  };
}
