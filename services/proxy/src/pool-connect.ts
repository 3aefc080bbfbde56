import type { Context, Counter, Meter, Span, UpDownCounter } from '@opentelemetry/api';
import { tracingFetch } from '@mcpx/telemetry';
import {
  connectMcp,
  type CreateMessageRequestParams,
  type ElicitRequestParams,
  type EraVerdict,
  type McpConnection,
} from '@mcpx/mcp-client';
import type { ServerCredentials } from '@mcpx/stored';
import { MemoryEraVerdicts, type EraVerdictSource } from './era-verdicts.js';
import { shareable, verdictOutcome } from './pool-rules.js';
import type { ConnectionPoolOptions, PoolHooks } from './connection-pool.js';

/**
 * The span a connect runs under (the pool's acquire step of the call that opens it): its
 * handshake's requests carry its trace context, and its era and verdict are recorded on it.
 */
export interface ConnectUnder {
  ctx: Context;
  span: Span;
}

/** A connection shared by the modern runs that use it, by account, server and auth context. */
interface Shared {
  conn: McpConnection;
  /** The auth context it was opened with: one string for every run's slot that shares it. */
  authContext: string;
  refs: number;
}

/**
 * The pool's side that opens and closes connections (./connection-pool.ts keeps the runs): each
 * connect with the era verdict of its auth context, one probe at a time per key; modern
 * connections shared between runs (one client per server and credential); the open count, the
 * handshake and verdict counters. A connection is closed once, with the last run holding it.
 */
export class PoolConnector {
  /** Modern connections shared by the runs that use them, by server and auth context. */
  private readonly shared = new Map<string, Shared>();
  private readonly sharedKeys = new WeakMap<McpConnection, string>();
  /** Probes under way (no verdict known yet), by server and auth context: other connects wait for the verdict instead of probing too. */
  private readonly probing = new Map<string, Promise<unknown>>();
  /** Connections opened and not yet closed by us (closing twice must not count twice). */
  private readonly counted = new WeakSet<McpConnection>();
  private readonly handshakes: Counter;
  private readonly verdictOutcomes: Counter;
  private readonly open: UpDownCounter;
  private readonly verdicts: EraVerdictSource;
  openCount = 0;
  /** Connects under way (not open yet), counted against the connection cap with the open ones. */
  connecting = 0;

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
  }

  /**
   * A modern connection to the server under this auth context that another run already opened: it
   * holds no session, so runs share it (one client per server and credential, not per run).
   */
  sharedModern(account: string, server: string, authContext: string): Shared | undefined {
    const key = `${account}\u0000${server}\u0000${authContext}`;
    const shared = this.shared.get(key);
    if (shared === undefined) return undefined;
    if (!shareable(shared.conn)) {
      this.shared.delete(key);
      return undefined;
    }
    shared.refs++;
    return shared;
  }

  /** Opens a connection, counted as connecting (against the cap) until it settles. */
  async connect(
    account: string,
    server: string,
    entry: ServerCredentials,
    authContext: string,
    acquire?: ConnectUnder,
  ): Promise<McpConnection> {
    this.connecting++;
    try {
      return await this.connectOnce(account, server, entry, authContext, acquire);
    } finally {
      this.connecting--;
    }
  }

  private async connectOnce(
    account: string,
    server: string,
    entry: ServerCredentials,
    authContext: string,
    acquire: ConnectUnder | undefined,
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
    // The handshake's requests carry the acquire span's context, passed by hand (the proxy's
    // context does not follow awaits); the connection's later requests carry their own.
    const handshake: { ctx?: Context } = acquire === undefined ? {} : { ctx: acquire.ctx };
    const connecting = connectMcp(this.connectOptions(account, server, entry, opened, prior, handshake));
    void connecting.then(
      () => delete handshake.ctx,
      () => delete handshake.ctx,
    );
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
    this.opened(account, server, authContext, conn, prior !== undefined, probeKey, acquire);
    settle?.();
    return conn;
  }

  private connectOptions(
    account: string,
    server: string,
    entry: ServerCredentials,
    opened: { conn?: McpConnection },
    prior: EraVerdict | undefined,
    handshake: { ctx?: Context },
  ): Parameters<typeof connectMcp>[0] {
    const { opts, hooks } = this;
    return {
      url: entry.url,
      ...(entry.transport ? { transport: entry.transport } : {}),
      headers: entry.headers,
      connectTimeoutMs: opts.connectTimeoutMs,
      ...(opts.fetch
        ? { fetch: handshake.ctx === undefined ? opts.fetch : tracingFetch(opts.fetch, () => handshake.ctx) }
        : {}),
      ...(opts.request ? { request: opts.request } : {}),
      ...(opts.traceCarrier ? { traceCarrier: opts.traceCarrier } : {}),
      ...(opts.capabilities ? { capabilities: opts.capabilities } : {}),
      ...(hooks.onElicitation
        ? {
            onElicitation: (params: ElicitRequestParams, ctx: { signal: AbortSignal }) =>
              hooks.onElicitation!(opened.conn, params, ctx.signal),
          }
        : {}),
      ...(hooks.onSampling
        ? {
            onSampling: (params: CreateMessageRequestParams, ctx: { signal: AbortSignal }) =>
              hooks.onSampling!(opened.conn, params, ctx.signal),
          }
        : {}),
      ...(prior !== undefined ? { prior } : {}),
      onToolsListChanged: () => opened.conn && hooks.onToolsChanged(account, server, opened.conn),
    };
  }

  /** A connection just opened: counted, shared when modern, its verdict learnt and reported. */
  private opened(
    account: string,
    server: string,
    authContext: string,
    conn: McpConnection,
    hadPrior: boolean,
    key: string,
    acquire: ConnectUnder | undefined,
  ): void {
    const span = acquire?.span;
    this.counted.add(conn);
    if (conn.era === 'modern' && !this.shared.has(key)) {
      this.shared.set(key, { conn, authContext, refs: 1 });
      this.sharedKeys.set(conn, key);
    }
    this.handshakes.add(1, { era: conn.era });
    this.open.add(1);
    this.openCount++;
    const outcome = verdictOutcome(hadPrior, conn.reprobed);
    this.verdictOutcomes.add(1, { outcome, era: conn.era });
    // On the call's span: which era the call went out on, and whether finding out cost a probe.
    span?.setAttributes({
      'mcpx.era': conn.era,
      'mcp.protocol.version': conn.protocolVersion,
      'mcpx.verdict': outcome,
    });
    // The opening's own requests (quiet discovery's listing) carry the acquire span's context.
    const ctx = acquire?.ctx;
    if (outcome === 'reused') {
      this.hooks.onOpen(account, server, conn, undefined, ctx);
    } else {
      this.verdicts.learned(account, server, authContext, conn.verdict);
      this.hooks.onOpen(account, server, conn, { verdict: conn.verdict, authContext }, ctx);
    }
  }

  /** A verdict found stale by a request after the connect: learnt, and reported. */
  reprobedLater(account: string, server: string, conn: McpConnection, authContext: string): void {
    this.verdictOutcomes.add(1, { outcome: 'reprobed', era: conn.era });
    this.verdicts.learned(account, server, authContext, conn.verdict);
    this.hooks.onVerdict?.(account, server, conn, { verdict: conn.verdict, authContext });
  }

  /**
   * A run lets go of `conn`: a shared one closes with the last run that holds it. `keepSession`:
   * a legacy session is left open on its server (a brokered task goes on in it by its id).
   */
  async release(conn: McpConnection, keepSession = false): Promise<void> {
    const sharedKey = this.sharedKeys.get(conn);
    const shared = sharedKey === undefined ? undefined : this.shared.get(sharedKey);
    if (sharedKey !== undefined && shared?.conn === conn) {
      if (--shared.refs > 0) return;
      this.shared.delete(sharedKey);
    }
    if (!this.counted.has(conn)) return;
    this.counted.delete(conn);
    this.open.add(-1);
    this.openCount--;
    await (keepSession ? conn.close({ keepSession: true }) : conn.close()).catch(() => undefined);
  }
}
