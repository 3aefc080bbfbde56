import { randomUUID } from 'node:crypto';
import {
  connect,
  errors as natsErrors,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  type Subscription,
} from '@nats-io/transport-node';
import {
  jetstream,
  jetstreamManager,
  JetStreamApiCodes,
  JetStreamApiError,
  RetentionPolicy,
  StorageType,
  type JetStreamClient,
  type JetStreamManager,
} from '@nats-io/jetstream';
import { NatsFailures, makeSubjects, natsFailure, type Subjects } from '@mcpx/contracts';
import { JetStreamPublisher } from './jetstream-publisher.js';
import { listen, type ListenOptions } from './listen.js';
import { notify } from './notify.js';
import { stderrLog, warnOf, type BusLog } from './log.js';
import { request, serve, traceHeaders, type Endpoint, type ValueDecoder } from './request-reply.js';

export interface BusOptions {
  url: string;
  /** The connection's name, shown by the server (`<service> <instance>`). */
  name: string;
  /** The namespace prefix of every subject and stream (`NATS_PREFIX`; default none). */
  prefix?: string;
  /** Default: one JSON line on stderr per fault, so a fault is never silent. */
  log?: BusLog;
  /** The service's own NATS credentials (user and password); unset: an anonymous connection. */
  credentials?: BusCredentials;
  /**
   * The prefix of this connection's reply inboxes (`_INBOX_<user>` under least privilege, the only
   * inbox its user may subscribe to; `@mcpx/config`'s `inboxPrefixOf`). Every request, JetStream
   * call and hand-made inbox of the connection lives under it (`Bus.inboxPrefix`). Unset:
   * `credentials.inboxPrefix`, else nats.js' `_INBOX`.
   */
  inboxPrefix?: string;
  /**
   * How long start-up waits for a NATS node that does not answer yet or whose JetStream is not
   * ready (a cluster node catching up, no meta leader yet), retrying with backoff; past it the
   * last error is thrown. Default `STARTUP_WAIT_MS`.
   */
  startupWaitMs?: number;
}

/**
 * Start-up's default wait for NATS and JetStream: under the orchestrator's liveness budget
 * (deploy/: 30 s initial delay plus six failed checks 10 s apart), so a node that never gets
 * ready ends in an exit and a restart, not a pod stuck waiting.
 */
export const STARTUP_WAIT_MS = 60_000;

/** A NATS user of the server's `authorization.users` (docs/bus.md#users: one per service and the runtime). */
export interface BusCredentials {
  user: string;
  pass: string;
  /**
   * The inbox prefix that goes with this user (`Config.natsCredentials` carries it), used when
   * `BusOptions.inboxPrefix` is not given.
   */
  inboxPrefix?: string;
}

/** nats.js' inbox prefix when a connection sets none. */
export const DEFAULT_INBOX_PREFIX = '_INBOX';

export interface Bus {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  subjects: Subjects;
  /**
   * The prefix of the connection's reply inboxes: an inbox made by hand (`createInbox(prefix)`)
   * must use it, or its user may not subscribe to it.
   */
  inboxPrefix: string;
  /**
   * Publishes a CBOR event on JetStream with trace headers and its `Nats-Msg-Id` (`msgId`; absent:
   * a fresh one), through the one JetStream publisher: a retry under the same id is stored once.
   * Waits for JetStream's acknowledgement (5 s) and throws `PublishError` without one.
   */
  publishEvent(subject: string, payload: unknown, msgId?: string): Promise<void>;
  /**
   * Publishes a core-NATS notification (`notify`): CBOR by the wire encoder, trace headers when a
   * span is active; no stream and no acknowledgement. Throws (at the caller) when the payload
   * cannot be encoded or the connection is closed.
   */
  notify<T>(subject: string, payload: T): void;
  /** Headers carrying the active trace context. */
  traceHeaders(): MsgHdrs;
  /**
   * Sends a request and returns its value, checked by `decodeValue` (a reply decoder of
   * `@mcpx/contracts`), or throws the typed error the responder sent.
   */
  request<T>(subject: string, payload: unknown, decodeValue: ValueDecoder<T>, timeoutMs?: number): Promise<T>;
  /**
   * Answers requests on a subject (in a queue group) with `handler`'s value or typed error. Each
   * request is decoded by `decode` first (its refusal is the answer); the handler runs in the
   * trace context the request carried.
   */
  serve<Req, Res>(
    subject: string,
    queue: string,
    decode: Endpoint<Req, Res>['decode'],
    handler: Endpoint<Req, Res>['handle'],
  ): Subscription;
  /** A guarded core-NATS subscription whose messages are decoded before `handle` sees them (`listen`). */
  listen<T>(
    subject: string,
    decode: (msg: Msg) => T,
    handle: (value: T, msg: Msg) => void,
    opts: Omit<ListenOptions, 'log'>,
  ): Subscription;
  close(): Promise<void>;
}

/** How long JetStream remembers message ids for de-duplication of retried publishes. */
const DUPLICATE_WINDOW_NS = 2 * 60 * 1_000_000_000;

/** Whether `err` is JetStream's "stream not found" (and not a timeout, a lost connection, …). */
export function isStreamNotFound(err: unknown): boolean {
  return err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound;
}

/**
 * Creates the streams if they are missing; safe to call from every instance on start. Only
 * "stream not found" means missing: any other failure to read a stream is thrown, so a slow or
 * broken JetStream is not answered by trying to create streams that exist.
 */
export async function ensureStreams(jsm: JetStreamManager, subjects: Subjects): Promise<void> {
  const specs = [
    { name: subjects.mcpEventsStream, subjects: [subjects.mcpEventsAll], max_age: 7 * 24 * 3600 * 1e9 },
    { name: subjects.agentToolsStream, subjects: [subjects.agentToolsChangedAll()], max_age: 24 * 3600 * 1e9 },
  ];
  for (const spec of specs) {
    try {
      await jsm.streams.info(spec.name);
      continue;
    } catch (err) {
      if (!isStreamNotFound(err)) throw err;
    }
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

/**
 * JetStream API error codes that a node answers while it is starting or catching up: no suitable
 * peers yet (10005), the cluster not available or no leader (10008, 10009), JetStream not
 * enabled for the account yet (10039), the stream offline (10118).
 */
const TRANSIENT_JETSTREAM_CODES: ReadonlySet<number> = new Set([10005, 10008, 10009, 10039, 10118]);

/**
 * Whether a start-up failure is one a node that is still starting or catching up gives, worth
 * waiting out: the server not listening yet, a request timing out, no responders ("JetStream not
 * enabled"), or a JetStream API answer of 503 or one of the transient codes. Authentication,
 * permissions and a stream's bad configuration are not: they do not heal by waiting. NATS's own
 * failures are told apart by class, in one place (`natsFailure` of the contracts).
 */
export function isTransientStartupError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  switch (natsFailure(err)) {
    case NatsFailures.unreachable:
    case NatsFailures.timeout:
    case NatsFailures.noResponders:
      return true;
    case NatsFailures.refused:
    case NatsFailures.closed:
      return false;
    case NatsFailures.lost:
    case undefined:
      break;
  }
  if (err instanceof natsErrors.RequestError) return isTransientStartupError(err.cause);
  if (err instanceof JetStreamApiError) return err.status === 503 || TRANSIENT_JETSTREAM_CODES.has(err.code);
  // @nats-io/jetstream does not export this class: its name is all there is to tell it by.
  return err.name === 'JetStreamNotEnabled';
}

/**
 * Runs a start-up step until it succeeds, retrying a transient failure (`isTransientStartupError`)
 * with exponential backoff (250 ms doubling to 5 s, with jitter) for at most `waitMs`; each retry
 * is logged (`warn`, the step and the error's name and message). A failure that is not transient,
 * or one past the wait, is thrown (an attempt under way at the bound is not cut: the wait may run
 * over by one request's timeout, JetStream's is 5 s). The service's `/healthz` is not served meanwhile (start-up has
 * not finished), so it is not ready.
 */
export async function retryStartup<T>(
  step: string,
  fn: () => Promise<T>,
  opts: { log: BusLog; waitMs?: number },
): Promise<T> {
  const deadline = Date.now() + (opts.waitMs ?? STARTUP_WAIT_MS);
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      const delayMs = Math.min(5_000, 250 * 2 ** (attempt - 1)) * (0.8 + 0.4 * Math.random());
      if (!isTransientStartupError(err) || Date.now() + delayMs > deadline) throw err;
      const e = err as Error;
      warnOf(opts.log)('NATS not ready at start-up, retrying', {
        step,
        attempt,
        retryInMs: Math.round(delayMs),
        err: { name: e.name, message: e.message },
      });
      await new Promise((r) => setTimeout(r, delayMs));
    }
  }
}

/**
 * Connects (reconnecting forever once connected), builds the subjects for `opts.prefix` and
 * ensures the streams. A node that does not answer yet, or whose JetStream is not ready, is waited
 * for (`retryStartup`, at most `opts.startupWaitMs`). Faults of `serve` that no caller sees go to
 * `opts.log`.
 */
export async function connectBus(opts: BusOptions): Promise<Bus> {
  const log = opts.log ?? stderrLog(opts.name);
  // Only the options named here reach nats.js: no field of a credentials object slips through.
  const inboxPrefix = opts.inboxPrefix ?? opts.credentials?.inboxPrefix ?? DEFAULT_INBOX_PREFIX;
  const auth = opts.credentials === undefined ? {} : { user: opts.credentials.user, pass: opts.credentials.pass };
  const waitMs = opts.startupWaitMs ?? STARTUP_WAIT_MS;
  const started = Date.now();
  const nc = await retryStartup(
    'connect',
    () => connect({ servers: opts.url, name: opts.name, maxReconnectAttempts: -1, inboxPrefix, ...auth }),
    { log, waitMs },
  );
  const subjects = makeSubjects(opts.prefix ?? '');
  let jsm: JetStreamManager;
  try {
    jsm = await retryStartup(
      'jetstream',
      async () => {
        const m = await jetstreamManager(nc);
        await ensureStreams(m, subjects);
        return m;
      },
      { log, waitMs: Math.max(0, waitMs - (Date.now() - started)) },
    );
  } catch (err) {
    await nc.close().catch(() => undefined);
    throw err;
  }
  const js = jetstream(nc);
  // Made on the first event: a service that publishes none holds no PubAck inbox. One attempt, as
  // `js.publish` makes: the outbox's sweep is the retry.
  let publisher: JetStreamPublisher | undefined;
  const publisherOf = (): JetStreamPublisher =>
    (publisher ??= new JetStreamPublisher(nc, inboxPrefix, traceHeaders, { window: 1_000, attempts: 1, log }));
  return {
    nc,
    js,
    jsm,
    subjects,
    inboxPrefix,
    traceHeaders,
    publishEvent: (subject, payload, msgId) =>
      publisherOf().publishAll([{ subject, payload, msgId: msgId ?? randomUUID() }]),
    notify: (subject, payload) => notify(nc, subject, payload),
    request: (subject, payload, decodeValue, timeoutMs) => request(nc, subject, payload, decodeValue, timeoutMs),
    serve: (subject, queue, decode, handle) => serve(nc, subject, queue, { decode, handle }, log),
    listen: (subject, decode, handle, o) => listen(nc, subject, decode, handle, { ...o, log }),
    close: async () => {
      publisher?.close();
      await nc.drain().catch(() => nc.close());
    },
  };
}
