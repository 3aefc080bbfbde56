import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import {
  SpanKind,
  SpanStatusCode,
  type Counter,
  type Meter,
  type Tracer,
  type UpDownCounter,
} from '@opentelemetry/api';
import {
  ErrorCodes,
  NoticeKinds,
  QueueGroups,
  WATCH_LEASE_MS,
  WatchKinds,
  WireError,
  authContextOf,
  decodeWatchRequest,
  encodePayload,
  type NoticeKind,
  type Subjects,
  type UpstreamNotice,
  type WatchReply,
  type WatchRequest,
} from '@mcpx/contracts';
import type { Logger } from '@mcpx/log';
import { McpAttributes, extractTraceContext } from '@mcpx/telemetry';
import type { Catalog } from './catalog.js';
import { grantedServer } from './granted-server.js';
import { NoticeCoalescer } from './notice-coalescer.js';
import type { UpstreamContexts } from './watch-contexts.js';
import { type WatchContext } from './watch-contexts.js';
import { toWire } from './wire-errors.js';
import { takeRequest } from './relay-replies.js';

/** The bounds on the upstream subscriptions one proxy instance holds. */
export interface WatchLimits {
  /** Upstream subscriptions of one account (resources and list watches together). */
  perAccount: number;
  /** Upstream subscriptions of this instance. */
  perInstance: number;
}

export const DEFAULT_WATCH_LIMITS: WatchLimits = { perAccount: 1_000, perInstance: 10_000 };

export interface UpstreamWatchDeps {
  nc: NatsConnection;
  subjects: Subjects;
  instance: string;
  catalog: Catalog;
  contexts: UpstreamContexts;
  tracer: Tracer;
  meter: Meter;
  log: Logger;
  limits?: WatchLimits;
  /** The coalescing window of a flood (default `COALESCE_MS`). */
  coalesceMs?: number;
}

/** One upstream subscription: a server's list changes, or one resource's updates, under one auth context. */
interface Entry {
  key: string;
  ctx: WatchContext;
  kind: WatchRequest['kind'];
  uri?: string;
  /** The endpoint instances holding it, each until its lease runs out. */
  holders: Map<string, number>;
  /** Settles once the upstream subscription is open (or known to need none). */
  opened: Promise<'live' | 'none'>;
  close: () => Promise<void>;
}

type NoticeBase = Omit<UpstreamNotice, 'count'>;

/**
 * The endpoint's upstream subscriptions (`mcp.proxy.watch`, docs/endpoint.md#subscriptions): one
 * per (account, server, auth context, what) however many endpoint clients want it — a resource's
 * `resources/subscribe` (2025) or a `subscriptions/listen` naming it (2026), a server's
 * list-changed stream — held by endpoint instances' leases and closed when the last lease goes.
 * What the server says of them is published on `mcp.notices.<acct>.<server>`, a flood coalesced
 * ({@link NoticeCoalescer}); notices of nothing held are dropped. The grant is checked at every
 * hold, as for a call. A span (`proxy.watch`) per request, the metrics `mcpx_proxy_watch_total`
 * (op, kind, outcome), `mcpx_proxy_upstream_subscriptions` and `mcpx_proxy_notices_total`.
 */
export class UpstreamWatches {
  private readonly entries = new Map<string, Entry>();
  private readonly perAccount = new Map<string, number>();
  private readonly subs: Subscription[] = [];
  private readonly coalescer: NoticeCoalescer<string, NoticeBase>;
  private readonly limits: WatchLimits;
  private readonly total: Counter;
  private readonly open: UpDownCounter;
  private readonly notices: Counter;
  private sweeper: NodeJS.Timeout | undefined;

  constructor(private readonly deps: UpstreamWatchDeps) {
    this.limits = deps.limits ?? DEFAULT_WATCH_LIMITS;
    this.total = deps.meter.createCounter('mcpx_proxy_watch_total', {
      description: 'Holds and releases of upstream subscriptions, by op, kind and outcome',
    });
    this.open = deps.meter.createUpDownCounter('mcpx_proxy_upstream_subscriptions', {
      description: 'Upstream subscriptions (list watches and resources) open',
    });
    this.notices = deps.meter.createCounter('mcpx_proxy_notices_total', {
      description:
        "Remote servers' list changes and resource updates, by kind and outcome (published, coalesced, unheld)",
    });
    this.coalescer = new NoticeCoalescer((base, count) => this.publish(base, count), deps.coalesceMs);
    deps.contexts.onNotice((ctx, kind, uri) => this.heard(ctx, kind, uri));
    deps.contexts.onLost((ctx) => this.lost(ctx));
  }

  start(): void {
    const { nc, subjects, instance } = this.deps;
    const callback = (err: Error | null, msg: Msg): void => {
      if (err === null) this.take(msg);
    };
    this.subs.push(
      nc.subscribe(subjects.proxyWatch, { queue: QueueGroups.proxy, callback }),
      nc.subscribe(subjects.proxyInstanceWatch(instance), { callback }),
    );
    this.sweeper = setInterval(() => void this.sweep(), Math.max(1_000, WATCH_LEASE_MS / 3));
    this.sweeper.unref();
  }

  async stop(): Promise<void> {
    for (const s of this.subs) s.unsubscribe();
    clearInterval(this.sweeper);
    this.coalescer.close();
    await Promise.all([...this.entries.values()].map((e) => this.drop(e)));
    await this.deps.contexts.closeAll();
  }

  /** How many upstream subscriptions are open (for tests and stats). */
  get size(): number {
    return this.entries.size;
  }

  private take(msg: Msg): void {
    const { instance, log } = this.deps;
    const refused = (): void =>
      void this.total.add(1, { op: 'unknown', kind: 'unknown', outcome: ErrorCodes.invalidInput });
    const taken = takeRequest(msg, decodeWatchRequest, { instance, log, what: 'watch', refused });
    if (taken === undefined) return;
    const { req } = taken;
    const reply = (body: WatchReply): void => taken.reply(body);
    const span = this.deps.tracer.startSpan(
      'proxy.watch',
      {
        kind: SpanKind.SERVER,
        attributes: {
          'mcp.account': req.account,
          'mcpx.agent': req.agent,
          [McpAttributes.server]: req.server,
          'mcpx.watch.op': req.op,
          'mcpx.watch.kind': req.kind,
        },
      },
      extractTraceContext(msg.headers),
    );
    const done = (outcome: string): void => {
      span.setAttribute(McpAttributes.outcome, outcome);
      span.end();
      this.total.add(1, { op: req.op, kind: req.kind, outcome });
    };
    (req.op === 'hold' ? this.hold(req) : this.release(req)).then(
      (upstream) => {
        done('ok');
        reply({ ok: true, instance, upstream });
      },
      (e: unknown) => {
        const wire = toWire(e);
        span.setStatus({ code: SpanStatusCode.ERROR, message: wire.message });
        done(wire.code);
        reply({ ok: false, instance, error: wire.toJSON() });
      },
    );
  }

  /** Holds (or renews) `req.holder`'s lease on the upstream subscription, opening it when it is the first. */
  private async hold(req: WatchRequest): Promise<'live' | 'none'> {
    const server = await grantedServer(this.deps.catalog, req);
    const ctxKey = `${req.account}\u0000${req.server}\u0000${authContextOf(server.url, server.headers)}`;
    const key = `${ctxKey}\u0000${req.kind}\u0000${req.uri ?? ''}`;
    let entry = this.entries.get(key);
    if (entry === undefined) {
      this.refuseWhenFull(req.account);
      const ctx = this.deps.contexts.context(ctxKey, req.account, req.server, server);
      entry = this.openEntry(key, ctx, req);
    }
    entry.holders.set(req.holder, Date.now() + WATCH_LEASE_MS);
    return await entry.opened;
  }

  private openEntry(key: string, ctx: WatchContext, req: WatchRequest): Entry {
    const entry: Entry = {
      key,
      ctx,
      kind: req.kind,
      ...(req.uri !== undefined ? { uri: req.uri } : {}),
      holders: new Map(),
      opened: Promise.resolve('none'),
      close: async () => {},
    };
    this.entries.set(key, entry);
    ctx.entries++;
    this.perAccount.set(req.account, (this.perAccount.get(req.account) ?? 0) + 1);
    this.open.add(1);
    entry.opened = (async () => {
      // A subscription the server ended is forgotten: the holders' next renewal opens it again.
      const ended = (): void => void this.drop(entry);
      const upstream =
        req.kind === WatchKinds.lists
          ? await this.deps.contexts.watchLists(ctx, ended)
          : await this.deps.contexts.watchResource(ctx, req.uri as string, ended);
      entry.close = upstream.close;
      return upstream.live ? 'live' : 'none';
    })();
    // A subscription that could not open is forgotten at once: the next hold tries again.
    entry.opened.catch(() => void this.drop(entry));
    return entry;
  }

  private refuseWhenFull(account: string): void {
    const mine = this.perAccount.get(account) ?? 0;
    if (mine >= this.limits.perAccount)
      throw new WireError(
        ErrorCodes.quotaExceeded,
        `this account holds ${this.limits.perAccount} upstream subscriptions on this proxy instance`,
        {
          limit: 'subscriptions_per_account',
          max: this.limits.perAccount,
        },
      );
    if (this.entries.size >= this.limits.perInstance)
      throw new WireError(
        ErrorCodes.rateLimited,
        `this proxy instance holds ${this.limits.perInstance} upstream subscriptions`,
        { limit: 'subscriptions_per_proxy', max: this.limits.perInstance },
      );
  }

  private async release(req: WatchRequest): Promise<'live' | 'none'> {
    for (const entry of this.entries.values()) {
      if (
        entry.ctx.account !== req.account ||
        entry.ctx.server !== req.server ||
        entry.kind !== req.kind ||
        (entry.uri ?? '') !== (req.uri ?? '')
      )
        continue;
      entry.holders.delete(req.holder);
      if (entry.holders.size === 0) await this.drop(entry);
    }
    return 'none';
  }

  private async drop(entry: Entry): Promise<void> {
    if (this.entries.get(entry.key) !== entry) return;
    this.entries.delete(entry.key);
    this.open.add(-1);
    const n = (this.perAccount.get(entry.ctx.account) ?? 1) - 1;
    if (n <= 0) this.perAccount.delete(entry.ctx.account);
    else this.perAccount.set(entry.ctx.account, n);
    this.coalescer.forget(noticeKey(entry.ctx.key, NoticeKinds.updated, entry.uri));
    await entry.close().catch(() => undefined);
    entry.ctx.entries--;
    await this.deps.contexts.releaseIfIdle(entry.ctx);
  }

  /** What a server said on a context's connection: published when someone holds it, else dropped. */
  private heard(ctx: WatchContext, kind: NoticeKind, uri: string | undefined): void {
    const held =
      kind === NoticeKinds.updated
        ? this.entries.has(`${ctx.key}\u0000${WatchKinds.resource}\u0000${uri ?? ''}`)
        : this.entries.has(`${ctx.key}\u0000${WatchKinds.lists}\u0000`);
    if (!held) {
      this.notices.add(1, { kind, outcome: 'unheld' });
      return;
    }
    const base: NoticeBase = { account: ctx.account, server: ctx.server, kind, ...(uri !== undefined ? { uri } : {}) };
    if (!this.coalescer.push(noticeKey(ctx.key, kind, uri), base)) this.notices.add(1, { kind, outcome: 'coalesced' });
  }

  private publish(base: NoticeBase, count: number): void {
    const { nc, subjects, log } = this.deps;
    try {
      nc.publish(
        subjects.upstreamNotice(base.account, base.server),
        encodePayload({ ...base, count } satisfies UpstreamNotice),
      );
      this.notices.add(1, { kind: base.kind, outcome: 'published' });
    } catch (err) {
      log.warn('upstream notice not published', { err: err as Error, server: base.server });
    }
  }

  /** A context's connection ended under it: its subscriptions go (the holders' next renewal opens them again). */
  private lost(ctx: WatchContext): void {
    for (const entry of [...this.entries.values()]) if (entry.ctx === ctx) void this.drop(entry);
  }

  /** Drops leases that ran out, and the subscriptions no lease holds any more. */
  private async sweep(now = Date.now()): Promise<void> {
    await this.deps.contexts.sweepClosed();
    for (const entry of [...this.entries.values()]) {
      for (const [holder, until] of entry.holders) if (until <= now) entry.holders.delete(holder);
      if (entry.holders.size === 0) await this.drop(entry);
    }
  }
}

function noticeKey(ctxKey: string, kind: NoticeKind, uri: string | undefined): string {
  return `${ctxKey}\u0000${kind}\u0000${uri ?? ''}`;
}
