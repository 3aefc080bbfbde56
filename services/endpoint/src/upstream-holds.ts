import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { SpanKind, SpanStatusCode, type Counter, type Meter, type Tracer } from '@opentelemetry/api';
import {
  ErrorCodes,
  WATCH_LEASE_MS,
  WireError,
  decodeUpstreamNotice,
  decodeWatchReply,
  encodeWatchRequest,
  guardCallback,
  natsFailure,
  NatsFailures,
  type CallbackLog,
  type Subjects,
  type UpstreamNotice,
  type WatchKind,
} from '@mcpx/contracts';

/** A proxy answers a hold within this (it opens the upstream subscription first). */
const HOLD_TIMEOUT_MS = 35_000;

/** What one hold is of: a granted server's list changes, or one of its resources (its own URI). */
export interface HoldTarget {
  account: string;
  /** An agent granted `server`: the proxy checks the grant at every hold and renewal. */
  agent: string;
  server: string;
  kind: WatchKind;
  uri?: string;
}

/** Told of the upstream notices of one account's server. */
export type NoticeSink = (notice: UpstreamNotice) => void;

interface Held {
  target: HoldTarget;
  refs: number;
  /** The proxy instance holding it (renewals and the release go there). */
  instance?: string;
  opened: Promise<'live' | 'none'>;
}

export interface UpstreamHoldsDeps {
  nc: NatsConnection;
  subjects: Subjects;
  /** This endpoint instance's token: the holder its leases name. */
  instance: string;
  tracer: Tracer;
  meter: Meter;
  log: CallbackLog;
}

const keyOf = (t: HoldTarget): string => `${t.account}\u0000${t.server}\u0000${t.kind}\u0000${t.uri ?? ''}`;

/**
 * This endpoint instance's holds of upstream subscriptions (docs/endpoint.md#subscriptions): one
 * per (account, server, what) however many of its clients want it, asked of the proxy
 * (`mcp.proxy.watch`) by the first and released (`mcp.proxy.<instance>.watch`) by the last,
 * renewed meanwhile within the lease (a proxy that went away is asked again through the queue
 * group). The notices the proxies publish (`mcp.notices.>`) go to the sinks attached to their
 * account and server, nowhere else. A span (`endpoint.watch`) per hold asked, the metrics
 * `mcpx_endpoint_watch_total` (op, outcome) and `mcpx_endpoint_notices_total` (kind).
 */
export class UpstreamHolds {
  private readonly held = new Map<string, Held>();
  private readonly sinks = new Map<string, Set<NoticeSink>>();
  private readonly total: Counter;
  private readonly heard: Counter;
  private sub: Subscription | undefined;
  private renewer: NodeJS.Timeout | undefined;

  constructor(private readonly deps: UpstreamHoldsDeps) {
    this.total = deps.meter.createCounter('mcpx_endpoint_watch_total', {
      description: 'Upstream subscriptions held, renewed and released through the proxy, by op and outcome',
    });
    this.heard = deps.meter.createCounter('mcpx_endpoint_notices_total', {
      description: 'Upstream notices (list changes, resource updates) heard from the proxies, by kind',
    });
  }

  start(): void {
    const { nc, subjects, log } = this.deps;
    this.sub = nc.subscribe(subjects.upstreamNoticesAll, {
      callback: guardCallback(log, 'upstream notice', (msg) => this.deliver(decodeUpstreamNotice(msg.data))),
    });
    this.renewer = setInterval(() => void this.renewAll(), WATCH_LEASE_MS / 3);
    this.renewer.unref();
  }

  async close(): Promise<void> {
    this.sub?.unsubscribe();
    clearInterval(this.renewer);
    const all = [...this.held.values()];
    this.held.clear();
    await Promise.all(all.map((h) => this.send('release', h).catch(() => undefined)));
  }

  /** Attaches `sink` to the notices of `account`'s `server`; returns its detach. */
  attach(account: string, server: string, sink: NoticeSink): () => void {
    const key = `${account}\u0000${server}`;
    let set = this.sinks.get(key);
    if (set === undefined) this.sinks.set(key, (set = new Set()));
    set.add(sink);
    let attached = true;
    return () => {
      if (!attached) return;
      attached = false;
      set.delete(sink);
      if (set.size === 0 && this.sinks.get(key) === set) this.sinks.delete(key);
    };
  }

  /**
   * Holds `target` for one more client: the proxy's answer (`live`, or `none` when the server has
   * nothing to say of it) once the upstream subscription is open; a typed WireError when it
   * cannot be (not granted, no subscriptions on that server, a quota). Pair with {@link release}.
   */
  async hold(target: HoldTarget): Promise<'live' | 'none'> {
    const key = keyOf(target);
    const hit = this.held.get(key);
    if (hit !== undefined) {
      hit.refs++;
      hit.target = target;
      return await hit.opened.catch((err: unknown) => {
        this.unref(key, hit);
        throw err;
      });
    }
    const held: Held = { target, refs: 1, opened: Promise.resolve('none') };
    held.opened = this.send('hold', held);
    this.held.set(key, held);
    try {
      return await held.opened;
    } catch (err) {
      this.unref(key, held);
      throw err;
    }
  }

  /** Releases one client's hold of `target`; the last one's release reaches the proxy. */
  release(target: HoldTarget): void {
    const key = keyOf(target);
    const held = this.held.get(key);
    if (held !== undefined) this.unref(key, held);
  }

  private unref(key: string, held: Held): void {
    if (--held.refs > 0 || this.held.get(key) !== held) return;
    this.held.delete(key);
    if (held.instance !== undefined) void this.send('release', held).catch(() => undefined);
  }

  private deliver(notice: UpstreamNotice): void {
    this.heard.add(1, { kind: notice.kind });
    const sinks = this.sinks.get(`${notice.account}\u0000${notice.server}`);
    if (sinks === undefined) return;
    for (const sink of [...sinks]) {
      try {
        sink(notice);
      } catch (err) {
        this.deps.log.warn('an upstream notice was not delivered', { err: err as Error });
      }
    }
  }

  /** Renews every hold at the proxy that holds it; one that lost its proxy (or its subscription) is held again. */
  private async renewAll(): Promise<void> {
    for (const held of [...this.held.values()]) {
      if (held.instance === undefined) continue;
      await this.send('hold', held).catch((err: unknown) =>
        this.deps.log.warn('an upstream subscription was not renewed', {
          err: err as Error,
          server: held.target.server,
        }),
      );
    }
  }

  private async send(op: 'hold' | 'release', held: Held): Promise<'live' | 'none'> {
    const { nc, subjects, instance, tracer } = this.deps;
    const t = held.target;
    const span = tracer.startSpan('endpoint.watch', {
      kind: SpanKind.CLIENT,
      attributes: { 'mcpx.account': t.account, 'mcp.server': t.server, 'mcpx.watch.op': op, 'mcpx.watch.kind': t.kind },
    });
    let outcome = 'ok';
    try {
      const payload = encodeWatchRequest({
        op,
        account: t.account,
        agent: t.agent,
        holder: instance,
        server: t.server,
        kind: t.kind,
        ...(t.uri !== undefined ? { uri: t.uri } : {}),
      });
      const direct = held.instance === undefined ? undefined : subjects.proxyInstanceWatch(held.instance);
      let data: Uint8Array;
      try {
        data = (await nc.request(direct ?? subjects.proxyWatch, payload, { timeout: HOLD_TIMEOUT_MS })).data;
      } catch (err) {
        // The holding instance went away: any other opens the subscription again.
        if (direct === undefined || op === 'release' || !isNoResponders(err)) throw noProxy(err);
        data = (
          await nc
            .request(subjects.proxyWatch, payload, { timeout: HOLD_TIMEOUT_MS })
            .catch((e: unknown) => Promise.reject(noProxy(e)))
        ).data;
      }
      const reply = decodeWatchReply(data);
      if (!reply.ok) throw WireError.from(reply.error);
      if (op === 'hold') held.instance = reply.instance;
      return reply.upstream;
    } catch (err) {
      outcome = err instanceof WireError ? err.code : 'error';
      span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
      throw err;
    } finally {
      span.setAttribute('mcpx.outcome', outcome);
      span.end();
      this.total.add(1, { op, outcome });
    }
  }
}

/** Nobody listens on the subject (told by nats.js' class, as the proxy client tells it). */
function isNoResponders(err: unknown): boolean {
  return natsFailure(err) === NatsFailures.noResponders;
}

function noProxy(err: unknown): WireError {
  if (err instanceof WireError) return err;
  if (isNoResponders(err))
    return new WireError(ErrorCodes.transportError, 'no proxy instance is running to hold the subscription');
  return new WireError(ErrorCodes.timeout, 'the proxy did not answer the subscription in time');
}
