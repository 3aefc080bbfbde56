import {
  context,
  trace,
  type Context,
  type Counter,
  type Meter,
  type Span,
  type Tracer,
  type UpDownCounter,
} from '@opentelemetry/api';
import { McpAttributes, endWithOutcome } from '@mcpx/telemetry';
import { DEFAULT_QUOTAS } from '@mcpx/config';
import {
  McpClientError,
  connectMcp,
  type McpHttpRequest,
  type ConnectMcpOptions,
  type CreateMessageRequestParams,
  type CreateMessageResult,
  type ElicitRequestParams,
  type ElicitResult,
  type EraVerdict,
  type McpConnection,
} from '@mcpx/mcp-client';
import { MemoryEraVerdicts, authContextOf, type EraVerdictSource } from './era-verdicts.js';
import type { ServerCredentials } from '@mcpx/stored';
import { capRefusal, runIsIdle, shareable, slotStep, verdictOutcome, type InstanceLimit } from './pool-rules.js';
import { toWire } from './wire-errors.js';

/** A verdict a connection had to probe for, to pass on to the registry with the quiet discovery. */
export interface VerdictReport {
  verdict: EraVerdict;
  /** SHA-256 of the URL and headers it was probed with (see ./era-verdicts.ts). */
  authContext: string;
}

export interface PoolHooks {
  /**
   * Called once per connection opened, with it (quiet discovery lists its tools). `report` is set
   * when the connection probed for its era verdict: send it to the registry, which stores it.
   */
  onOpen(account: string, server: string, conn: McpConnection, report?: VerdictReport): void;
  /** Called when a server says its tool list changed. */
  onToolsChanged(account: string, server: string, conn: McpConnection): void;
  /**
   * Called when a connection's verdict went stale after it opened and was re-probed (a modern
   * prior is adopted with no round trip, so its first request finds out): send it to the registry.
   */
  onVerdict?(account: string, server: string, conn: McpConnection, report: VerdictReport): void;
  /**
   * Answers a legacy server's `elicitation/create`, pushed on `conn` during a call (set: legacy
   * connections declare elicitation; the client answers it on the session, from the call's own stream or the GET stream).
   */
  onElicitation?(
    conn: McpConnection | undefined,
    params: ElicitRequestParams,
    signal: AbortSignal,
  ): Promise<ElicitResult>;
  /** Answers a legacy server's `sampling/createMessage`, pushed on `conn` during a call (as `onElicitation`). */
  onSampling?(
    conn: McpConnection | undefined,
    params: CreateMessageRequestParams,
    signal: AbortSignal,
  ): Promise<CreateMessageResult>;
}

interface Slot {
  promise: Promise<McpConnection>;
  /** Set once the handshake completed: the hot path then needs no await. */
  conn?: McpConnection;
  /** Its auth context, and whether its verdict was known to be fresh (probed at the connect, or re-probe reported). */
  authContext?: string;
  verdictReported?: boolean;
}

interface RunPool {
  account: string;
  run: string;
  connections: Map<string, Slot>;
  lastUsed: number;
  active: number;
}

export interface ConnectionPoolOptions {
  connectTimeoutMs: number;
  idleMs: number;
  fetch?: typeof fetch;
  /** What `tools/call` sends with, both eras (the outbound fetch's own request, traced); unset: `fetch`, adapted. */
  request?: McpHttpRequest;
  /** The active trace context as `traceparent`/`tracestate`, for each modern request's `_meta`. */
  traceCarrier?: () => Record<string, string>;
  /**
   * Declared to every server: what the connector can answer mid-call (elicitation in form and URL
   * mode, sampling through the runtime). A server asks (`input_required`) only within it.
   */
  capabilities?: ConnectMcpOptions['capabilities'];
  /**
   * Era verdicts to connect with (a modern server then costs no round trip to connect, a legacy
   * one goes straight to `initialize`). Default: what this instance learnt, in memory.
   */
  verdicts?: EraVerdictSource;
  /** Runs this instance holds pools for at once (`config.quotas.runsPerProxy`; default 10,000; 0 = no cap). */
  maxRuns?: number;
  /** Remote connections this instance holds open at once (`config.quotas.connectionsPerProxy`; default 2,000; 0 = no cap). */
  maxConnections?: number;
  /** Traces a call's wait for its connection (`proxy.pool.acquire`) under the `parent` given to {@link ConnectionPool.use}. */
  tracer?: Tracer;
  /**
   * Runs whose sessions outlive this instance's stop (a brokered task's: its legacy session holds
   * the task, and another instance takes it over with the session's id). Their connections are
   * not ended by {@link ConnectionPool.closeAll}.
   */
  keepOnClose?: (run: string) => boolean;
}

/**
 * Connections per run: lazy (nothing opens until a run's first call of a server), shared by the
 * run's concurrent calls (they await one handshake), and closed together when the run ends, goes
 * idle, or the proxy stops.
 *
 * Each connect uses the server's era verdict for its auth context. To a modern (2026-07-28)
 * server a connection is no session: it costs no round trip and holds nothing on the server, so
 * any instance can serve any call of a run, and the runs of an instance share one connection per
 * server and auth context (closed with the last of them). A legacy connection is a session, kept
 * per run.
 */
export class ConnectionPool {
  private readonly runs = new Map<string, RunPool>();
  private readonly sweeper: NodeJS.Timeout;
  private readonly handshakes: Counter;
  private readonly verdictOutcomes: Counter;
  private readonly open: UpDownCounter;
  private readonly verdicts: EraVerdictSource;
  /** Modern connections shared by the runs that use them, by server and auth context. */
  private readonly shared = new Map<string, { conn: McpConnection; refs: number }>();
  private readonly sharedKeys = new WeakMap<McpConnection, string>();
  /** Probes under way (no verdict known yet), by server and auth context: other connects wait for the verdict instead of probing too. */
  private readonly probing = new Map<string, Promise<unknown>>();
  private openCount = 0;
  /** Connects under way (not open yet), counted against the connection cap with the open ones. */
  private connecting = 0;
  private readonly rejections: Counter;
  /** Connections opened and not yet closed by us (closing twice must not count twice). */
  private readonly counted = new WeakSet<McpConnection>();

  constructor(
    private readonly opts: ConnectionPoolOptions,
    private readonly hooks: PoolHooks,
    meter: Meter,
  ) {
    this.handshakes = meter.createCounter('mcpx_proxy_handshakes_total', {
      description: 'MCP connections opened, by era',
    });
    this.verdictOutcomes = meter.createCounter('mcpx_proxy_era_verdicts_total', {
      description: 'Era verdicts of opened connections by outcome (reused, probed, reprobed) and era',
    });
    this.verdicts = opts.verdicts ?? new MemoryEraVerdicts();
    this.open = meter.createUpDownCounter('mcpx_proxy_open_connections', { description: 'Open MCP connections' });
    this.rejections = meter.createCounter('mcpx_quota_rejections_total', {
      description: 'Requests refused by a quota or rate limit, by kind',
    });
    this.sweeper = setInterval(() => void this.sweepIdle(), Math.max(1_000, Math.min(opts.idleMs / 2, 30_000)));
    this.sweeper.unref();
  }

  /**
   * A full instance refuses new work with a retryable `rate_limited` (the caller's client may send
   * the run to another instance); what it already holds goes on.
   */
  private refuseWhenFull(limit: InstanceLimit, held: number, max: number, what: string): void {
    const refusal = capRefusal(limit, held, max, what);
    if (refusal === undefined) return;
    this.rejections.add(1, { kind: limit });
    throw refusal;
  }

  private counting<T>(connect: Promise<T>): Promise<T> {
    this.connecting++;
    return connect.finally(() => this.connecting--);
  }

  get stats(): { runs: number; connections: number } {
    return { runs: this.runs.size, connections: this.openCount };
  }

  /**
   * Runs `fn` with the run's connection to a server, opening it on first use. `fresh` drops the
   * current connection first (after a lost session). A call that has to wait for its connection
   * (its own handshake, or one another call started) gets a `proxy.pool.acquire` span under
   * `parent`; one whose connection is ready costs no span.
   */
  async use<T>(
    account: string,
    run: string,
    server: string,
    entry: ServerCredentials,
    fn: (conn: McpConnection) => Promise<T>,
    fresh = false,
    parent?: Context,
  ): Promise<T> {
    const key = `${account}:${run}`;
    let pool = this.runs.get(key);
    if (pool === undefined) {
      this.refuseWhenFull('runs_per_proxy', this.runs.size, this.opts.maxRuns ?? DEFAULT_QUOTAS.runsPerProxy, 'runs');
      pool = { account, run, connections: new Map(), lastUsed: Date.now(), active: 0 };
      this.runs.set(key, pool);
    }
    pool.active++;
    pool.lastUsed = Date.now();
    let acquiring: Span | undefined;
    try {
      // A fresh one after a lost session or a refused token (the retry).
      if (fresh) await this.drop(pool, server);
      let slot = pool.connections.get(server);
      if (slotStep(slot === undefined ? undefined : { closed: slot.conn?.closed }) === 'replace') {
        // Closed under us (the server ended the session): open a new one.
        await this.drop(pool, server);
        slot = undefined;
      }
      if (slot === undefined) {
        if (this.runs.get(key) !== pool)
          throw new McpClientError('transport_error', 'the run ended while the call was starting');
        const authContext = authContextOf(entry.url, entry.headers);
        const reused = this.sharedModern(account, server, authContext);
        if (reused) {
          // A modern run holds no session: its slot is the shared connection, nothing pending.
          slot = { promise: Promise.resolve(reused), conn: reused, authContext, verdictReported: true };
          pool.connections.set(server, slot);
        } else {
          this.refuseWhenFull(
            'connections_per_proxy',
            this.openCount + this.connecting,
            this.opts.maxConnections ?? DEFAULT_QUOTAS.connectionsPerProxy,
            'remote connections',
          );
          acquiring = this.acquireSpan(parent, server, true);
          // The connect runs under the acquire span: its era and verdict are recorded there.
          const connecting =
            acquiring === undefined
              ? this.connect(account, server, entry, authContext)
              : context.with(trace.setSpan(parent!, acquiring), () =>
                  this.connect(account, server, entry, authContext),
                );
          const created: Slot = { promise: this.counting(connecting), authContext };
          slot = created;
          pool.connections.set(server, created);
          created.promise.then(
            (c) => {
              created.conn = c;
              created.verdictReported ||= c.reprobed;
            },
            () => {
              if (pool.connections.get(server) === created) pool.connections.delete(server);
            },
          );
        }
      }
      let conn = slot.conn;
      if (conn === undefined) {
        acquiring ??= this.acquireSpan(parent, server, false);
        try {
          conn = await slot.promise;
        } catch (err) {
          if (acquiring !== undefined) endWithOutcome(acquiring, toWire(err).code);
          throw err;
        }
        if (acquiring !== undefined) {
          acquiring.setAttribute('mcpx.era', conn.era);
          endWithOutcome(acquiring);
        }
      }
      try {
        return await fn(conn);
      } finally {
        if (conn.reprobed && slot.verdictReported === false) this.reprobedLater(account, server, conn, slot);
      }
    } finally {
      pool.active--;
      pool.lastUsed = Date.now();
    }
  }

  /** `handshake`: this call opens the connection (else it waits for one another call is opening). */
  private acquireSpan(parent: Context | undefined, server: string, handshake: boolean): Span | undefined {
    if (parent === undefined || this.opts.tracer === undefined) return undefined;
    return this.opts.tracer.startSpan(
      'proxy.pool.acquire',
      { attributes: { [McpAttributes.server]: server, 'mcpx.pool.handshake': handshake } },
      parent,
    );
  }

  /**
   * A modern connection to the server under this auth context that another run already opened: it
   * holds no session, so runs share it (one client per server and credential, not per run).
   */
  private sharedModern(account: string, server: string, authContext: string): McpConnection | undefined {
    const key = `${account}\u0000${server}\u0000${authContext}`;
    const shared = this.shared.get(key);
    if (shared === undefined) return undefined;
    if (!shareable(shared.conn)) {
      this.shared.delete(key);
      return undefined;
    }
    shared.refs++;
    return shared.conn;
  }

  private async connect(
    account: string,
    server: string,
    entry: ServerCredentials,
    authContext: string,
  ): Promise<McpConnection> {
    // The notification handler is registered before the connection exists; it reads it from here.
    const opened: { conn?: McpConnection } = {};
    const probeKey = `${account}\u0000${server}\u0000${authContext}`;
    let prior = await this.verdicts.get(account, server, authContext);
    const under = prior === undefined ? this.probing.get(probeKey) : undefined;
    if (under !== undefined) {
      await under.catch(() => undefined);
      prior = await this.verdicts.get(account, server, authContext);
    }
    const connecting = connectMcp({
      url: entry.url,
      ...(entry.transport ? { transport: entry.transport } : {}),
      headers: entry.headers,
      connectTimeoutMs: this.opts.connectTimeoutMs,
      ...(this.opts.fetch ? { fetch: this.opts.fetch } : {}),
      ...(this.opts.request ? { request: this.opts.request } : {}),
      ...(this.opts.traceCarrier ? { traceCarrier: this.opts.traceCarrier } : {}),
      ...(this.opts.capabilities ? { capabilities: this.opts.capabilities } : {}),
      ...(this.hooks.onElicitation
        ? {
            onElicitation: (params: ElicitRequestParams, ctx: { signal: AbortSignal }) =>
              this.hooks.onElicitation!(opened.conn, params, ctx.signal),
          }
        : {}),
      ...(this.hooks.onSampling
        ? {
            onSampling: (params: CreateMessageRequestParams, ctx: { signal: AbortSignal }) =>
              this.hooks.onSampling!(opened.conn, params, ctx.signal),
          }
        : {}),
      ...(prior !== undefined ? { prior } : {}),
      onToolsListChanged: () => opened.conn && this.hooks.onToolsChanged(account, server, opened.conn),
    });
    // The first probe of a key is waited for by the others; it settles once its verdict is learnt (below).
    let settle: (() => void) | undefined;
    if (prior === undefined && !this.probing.has(probeKey)) {
      const settled = new Promise<void>((resolve) => {
        settle = () => {
          if (this.probing.get(probeKey) === settled) this.probing.delete(probeKey);
          resolve();
        };
      });
      this.probing.set(probeKey, settled);
    }
    let conn: McpConnection;
    try {
      conn = await connecting;
    } catch (err) {
      settle?.();
      throw err;
    }
    opened.conn = conn;
    this.counted.add(conn);
    if (conn.era === 'modern' && !this.shared.has(probeKey)) {
      this.shared.set(probeKey, { conn, refs: 1 });
      this.sharedKeys.set(conn, probeKey);
    }
    this.handshakes.add(1, { era: conn.era });
    this.open.add(1);
    this.openCount++;
    const outcome = verdictOutcome(prior !== undefined, conn.reprobed);
    this.verdictOutcomes.add(1, { outcome, era: conn.era });
    // On the call's span: which era the call went out on, and whether finding out cost a probe.
    trace
      .getActiveSpan()
      ?.setAttributes({ 'mcpx.era': conn.era, 'mcp.protocol.version': conn.protocolVersion, 'mcpx.verdict': outcome });
    if (outcome === 'reused') {
      this.hooks.onOpen(account, server, conn);
    } else {
      this.verdicts.learned(account, server, authContext, conn.verdict);
      settle?.();
      this.hooks.onOpen(account, server, conn, { verdict: conn.verdict, authContext });
    }
    return conn;
  }

  /** A verdict found stale by a request after the connect: learnt, and reported once. */
  private reprobedLater(account: string, server: string, conn: McpConnection, slot: Slot): void {
    slot.verdictReported = true;
    if (slot.authContext === undefined) return;
    this.verdictOutcomes.add(1, { outcome: 'reprobed', era: conn.era });
    this.verdicts.learned(account, server, slot.authContext, conn.verdict);
    this.hooks.onVerdict?.(account, server, conn, { verdict: conn.verdict, authContext: slot.authContext });
  }

  private async drop(pool: RunPool, server: string): Promise<void> {
    const slot = pool.connections.get(server);
    pool.connections.delete(server);
    if (slot) await this.closeConn(slot);
  }

  private async closeConn(slot: Slot): Promise<void> {
    const conn = await slot.promise.catch(() => undefined);
    if (conn === undefined) return;
    const sharedKey = this.sharedKeys.get(conn);
    const shared = sharedKey === undefined ? undefined : this.shared.get(sharedKey);
    if (sharedKey !== undefined && shared?.conn === conn) {
      // Closed with the last run that uses it.
      if (--shared.refs > 0) return;
      this.shared.delete(sharedKey);
    }
    if (!this.counted.has(conn)) return;
    this.counted.delete(conn);
    this.open.add(-1);
    this.openCount--;
    await conn.close().catch(() => undefined);
  }

  /** Closes a run's connections (on `mcp.runs.ended`). */
  async endRun(account: string, run: string): Promise<boolean> {
    const key = `${account}:${run}`;
    const pool = this.runs.get(key);
    if (pool === undefined) return false;
    this.runs.delete(key);
    await Promise.all([...pool.connections.values()].map((c) => this.closeConn(c)));
    return true;
  }

  private async sweepIdle(): Promise<void> {
    const cutoff = Date.now() - this.opts.idleMs;
    for (const pool of [...this.runs.values()]) {
      if (runIsIdle(pool, cutoff)) await this.endRun(pool.account, pool.run);
    }
  }

  async closeAll(): Promise<void> {
    clearInterval(this.sweeper);
    const keep = this.opts.keepOnClose;
    await Promise.all(
      [...this.runs.values()]
        .filter((p) => keep === undefined || !keep(p.run))
        .map((p) => this.endRun(p.account, p.run)),
    );
  }

  /** Keeps a run from going idle (a brokered task's session, polled by this instance). */
  touch(account: string, run: string): void {
    const pool = this.runs.get(`${account}:${run}`);
    if (pool !== undefined) pool.lastUsed = Date.now();
  }
}
