import { trace, type Context, type Counter, type Meter, type Span, type Tracer } from '@opentelemetry/api';
import { McpAttributes, endWithOutcome } from '@mcpx/telemetry';
import { DEFAULT_QUOTAS } from '@mcpx/config';
import {
  McpClientError,
  type McpHttpRequest,
  type ConnectMcpOptions,
  type CreateMessageRequestParams,
  type CreateMessageResult,
  type ElicitRequestParams,
  type ElicitResult,
  type EraVerdict,
  type McpConnection,
} from '@mcpx/mcp-client';
import type { ServerCredentials } from '@mcpx/stored';
import { authContextFor, type EraVerdictSource } from './era-verdicts.js';
import { PoolConnector } from './pool-connect.js';
import { capRefusal, runIsIdle, slotStep, type InstanceLimit } from './pool-rules.js';
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
   * `ctx`: the trace context the connection opened under (its acquire span), for the requests
   * the opening makes.
   */
  onOpen(account: string, server: string, conn: McpConnection, report?: VerdictReport, ctx?: Context): void;
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
 * A run's connection to one server: `conn` once open (the hot path then needs no await), `pending`
 * while its handshake runs. The promise is let go once it settles: a promise keeps the async
 * context it was made in (the first call's trace context and span) for as long as it is held.
 */
interface Slot {
  server: string;
  conn: McpConnection | undefined;
  pending: Promise<McpConnection> | undefined;
  /** The auth context it connected under (shared by every run of a credential). */
  authContext: string;
  /** Whether its verdict is known to be fresh (probed at the connect, or the re-probe reported). */
  verdictReported: boolean;
}

/** What the pool keeps per open run: a few fields and its slots (a run mostly calls one server or two). */
interface RunPool {
  slots: readonly Slot[];
  lastUsed: number;
  active: number;
}

/** A new run's slots: none yet (shared, never changed in place). */
const NO_SLOTS: readonly Slot[] = Object.freeze([]);

const slotOf = (pool: RunPool, server: string): Slot | undefined => pool.slots.find((s) => s.server === server);

// Arrays of their exact length: a push on an empty array would reserve room for 17.
function addSlot(pool: RunPool, slot: Slot): void {
  pool.slots = pool.slots.length === 0 ? [slot] : [...pool.slots, slot];
}

function removeSlot(pool: RunPool, slot: Slot): void {
  if (pool.slots.includes(slot)) pool.slots = pool.slots.filter((s) => s !== slot);
}

/**
 * Connections per run: lazy (nothing opens until a run's first call of a server), shared by the
 * run's concurrent calls (they await one handshake), and closed together when the run ends, goes
 * idle, or the proxy stops.
 *
 * Each connect uses the server's era verdict for its auth context (./pool-connect.ts). To a modern
 * (2026-07-28) server a connection is no session: it costs no round trip and holds nothing on the
 * server, so any instance can serve any call of a run, and the runs of an instance share one
 * connection per server and auth context (closed with the last of them). A legacy connection is a
 * session, kept per run. An open run costs a small record (runs by account, then by run id).
 */
export class ConnectionPool {
  private readonly runs = new Map<string, Map<string, RunPool>>();
  private runCount = 0;
  private readonly sweeper: NodeJS.Timeout;
  private readonly connector: PoolConnector;
  private readonly rejections: Counter;

  constructor(
    private readonly opts: ConnectionPoolOptions,
    hooks: PoolHooks,
    meter: Meter,
  ) {
    this.connector = new PoolConnector(opts, hooks, meter);
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

  get stats(): { runs: number; connections: number } {
    return { runs: this.runCount, connections: this.connector.openCount };
  }

  private runOf(account: string, run: string): RunPool {
    let runs = this.runs.get(account);
    let pool = runs?.get(run);
    if (pool !== undefined) return pool;
    this.refuseWhenFull('runs_per_proxy', this.runCount, this.opts.maxRuns ?? DEFAULT_QUOTAS.runsPerProxy, 'runs');
    if (runs === undefined) this.runs.set(account, (runs = new Map()));
    pool = { slots: NO_SLOTS, lastUsed: Date.now(), active: 0 };
    runs.set(run, pool);
    this.runCount++;
    return pool;
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
    const pool = this.runOf(account, run);
    pool.active++;
    pool.lastUsed = Date.now();
    try {
      // A fresh one after a lost session or a refused token (the retry).
      if (fresh) await this.drop(pool, server);
      let slot = slotOf(pool, server);
      if (slotStep(slot === undefined ? undefined : { closed: slot.conn?.closed }) === 'replace') {
        // Closed under us (the server ended the session): open a new one.
        await this.drop(pool, server);
        slot = undefined;
      }
      let acquiring: Span | undefined;
      if (slot === undefined) {
        if (this.runs.get(account)?.get(run) !== pool)
          throw new McpClientError('transport_error', 'the run ended while the call was starting');
        ({ slot, acquiring } = this.openSlot(account, pool, server, entry, parent));
      }
      const conn = slot.conn ?? (await this.waitFor(slot, acquiring ?? this.acquireSpan(parent, server, false)));
      try {
        return await fn(conn);
      } finally {
        if (conn.reprobed && !slot.verdictReported) {
          slot.verdictReported = true;
          this.connector.reprobedLater(account, server, conn, slot.authContext);
        }
      }
    } finally {
      pool.active--;
      pool.lastUsed = Date.now();
    }
  }

  /** The run's slot for a server it has none for: the shared modern connection, or a connect of its own. */
  private openSlot(
    account: string,
    pool: RunPool,
    server: string,
    entry: ServerCredentials,
    parent: Context | undefined,
  ): { slot: Slot; acquiring?: Span } {
    const authContext = authContextFor(entry);
    const shared = this.connector.sharedModern(account, server, authContext);
    if (shared !== undefined) {
      // A modern run holds no session: its slot is the shared connection, nothing pending.
      const slot: Slot = {
        server,
        conn: shared.conn,
        pending: undefined,
        authContext: shared.authContext,
        verdictReported: true,
      };
      addSlot(pool, slot);
      return { slot };
    }
    const { connector } = this;
    this.refuseWhenFull(
      'connections_per_proxy',
      connector.openCount + connector.connecting,
      this.opts.maxConnections ?? DEFAULT_QUOTAS.connectionsPerProxy,
      'remote connections',
    );
    const acquiring = this.acquireSpan(parent, server, true);
    // The connect runs under the acquire span: its era and verdict are recorded there.
    const connecting =
      acquiring === undefined
        ? connector.connect(account, server, entry, authContext)
        : connector.connect(account, server, entry, authContext, {
            ctx: trace.setSpan(parent!, acquiring),
            span: acquiring,
          });
    const slot: Slot = { server, conn: undefined, pending: connecting, authContext, verdictReported: false };
    addSlot(pool, slot);
    connecting.then(
      (c) => {
        slot.conn = c;
        slot.pending = undefined;
        slot.verdictReported = c.reprobed;
      },
      () => {
        slot.pending = undefined;
        removeSlot(pool, slot);
      },
    );
    return { slot, acquiring };
  }

  /** Waits for a slot's handshake, under the acquire span when there is one. */
  private async waitFor(slot: Slot, acquiring: Span | undefined): Promise<McpConnection> {
    let conn: McpConnection;
    try {
      conn = await slot.pending!;
    } catch (err) {
      if (acquiring !== undefined) endWithOutcome(acquiring, toWire(err).code);
      throw err;
    }
    if (acquiring !== undefined) {
      acquiring.setAttribute('mcpx.era', conn.era);
      endWithOutcome(acquiring);
    }
    return conn;
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

  private async drop(pool: RunPool, server: string): Promise<void> {
    const slot = slotOf(pool, server);
    if (slot === undefined) return;
    removeSlot(pool, slot);
    await this.closeSlot(slot);
  }

  private async closeSlot(slot: Slot, keepSessions = false): Promise<void> {
    const conn = slot.conn ?? (await slot.pending?.catch(() => undefined));
    if (conn !== undefined) await this.connector.release(conn, keepSessions);
  }

  /**
   * Closes a run's connections (on `mcp.runs.ended`). `keepSessions`: their legacy sessions are
   * left open on their servers (a brokered 2025 task's run, let go while the task goes on in its
   * session by the session's id; the session is ended with the task).
   */
  async endRun(account: string, run: string, opts: { keepSessions?: boolean } = {}): Promise<boolean> {
    const runs = this.runs.get(account);
    const pool = runs?.get(run);
    if (runs === undefined || pool === undefined) return false;
    runs.delete(run);
    if (runs.size === 0) this.runs.delete(account);
    this.runCount--;
    const keep = opts.keepSessions === true;
    await Promise.all(pool.slots.map((s) => this.closeSlot(s, keep)));
    return true;
  }

  /** Every open run, as (account, run, its record): a copy, so that ending runs on the way is safe. */
  private allRuns(): [string, string, RunPool][] {
    const all: [string, string, RunPool][] = [];
    for (const [account, runs] of this.runs) for (const [run, pool] of runs) all.push([account, run, pool]);
    return all;
  }

  private async sweepIdle(): Promise<void> {
    const cutoff = Date.now() - this.opts.idleMs;
    for (const [account, run, pool] of this.allRuns()) {
      // Still the same run (one ended on the way may have been opened again since).
      if (runIsIdle(pool, cutoff) && this.runs.get(account)?.get(run) === pool) await this.endRun(account, run);
    }
  }

  async closeAll(): Promise<void> {
    clearInterval(this.sweeper);
    const keep = this.opts.keepOnClose;
    await Promise.all(
      this.allRuns()
        .filter(([, run]) => keep === undefined || !keep(run))
        .map(([account, run]) => this.endRun(account, run)),
    );
  }

  /** Keeps a run from going idle (a brokered task's session, polled by this instance). */
  touch(account: string, run: string): void {
    const pool = this.runs.get(account)?.get(run);
    if (pool !== undefined) pool.lastUsed = Date.now();
  }
}
