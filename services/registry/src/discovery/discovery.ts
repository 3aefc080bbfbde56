import { SpanKind, trace, type Counter, type Histogram, type Meter, type Tracer } from '@opentelemetry/api';
import type { Bus } from '@mcpx/bus';
import type { ServerStatus, Transport } from '@mcpx/contracts';
import type { RemoteTool } from '@mcpx/domain';
import { DEFAULT_QUOTAS, type QuotaSettings } from '@mcpx/config';
import type { LeaseQuota, SingleFlight } from '@mcpx/locks';
import type { Logger } from '@mcpx/log';
import { CONNECTOR_CAPABILITIES, connectMcp, explainConnectFailure, resourceMetadataUrl, type EraVerdict, type McpConnection } from '@mcpx/mcp-client';
import { budgetedFetch, ResponseBound } from '@mcpx/outbound';
import { McpAttributes, safeUrlForTelemetry, traceCarrier, withSpan } from '@mcpx/telemetry';
import { discoveryErrorCode, tracedRequests } from './discovery-telemetry.js';
import { withDiscoveryLease } from './discovery-leases.js';
import { nextProbeDelayMs, relistDelayMs } from './discovery-schedule.js';
import { authContextOf, isAuthContext, parseEraVerdict } from './era-verdicts.js';
import { ListenStreams, type ListenTarget } from './listen-streams.js';
import { listHints, sanitizeTools, screenTools, TOOL_LIMITS, toolsHash } from '../catalog/remote-tools.js';
import type { McpServerRecord, McpServersRepository } from '../catalog/mcp-servers.repository.js';
import type { ToolOverrides, ToolPermissionsRepository } from '../catalog/tool-permissions.repository.js';
import type { CredentialReader, ServerCredentials } from '@mcpx/credentials';
import { pinModeOf, type WantedChange } from '../review/pin-policy.js';
import { recordPinnedDiscovery } from '../review/pin-store.js';
import type { Database } from '@mcpx/db';
import type { Kysely } from 'kysely';
import type { EventOutbox } from '../events/outbox.js';
import { serverDiscovered } from '../catalog/server-events.js';
import { CredentialError } from '../shared/credential-error.js';
import { Semaphore } from '../shared/semaphore.js';

export { nextProbeDelayMs, REPROBE_BACKOFF, RELIST, relistDelayMs } from './discovery-schedule.js';
export { sanitizeTools, screenTools, toolsHash } from '../catalog/remote-tools.js';

/** How long after a discovery's deadline its fetch's own deadline cuts what is still open. */
const FETCH_DEADLINE_GRACE_MS = 1_000;

/** Bounds on what a remote server may hand us (its data is untrusted). */
export const DISCOVERY_LIMITS = {
  connectTimeoutMs: 30_000,
  maxPages: 50,
  maxTools: TOOL_LIMITS.maxTools,
  maxToolNameLength: TOOL_LIMITS.maxToolNameLength,
  /**
   * Decompressed bytes of every response body one discovery reads, together (connect, renewals,
   * every page): each body is bounded on its own, so this is what stops many pages that are each
   * under that bound.
   */
  maxTotalBytes: 32 * 1024 * 1024,
  /** Discoveries that may talk to remote servers at once, per registry instance (the rest queue). */
  concurrency: 16,
} as const;

/**
 * Whether a 401 asks for OAuth (RFC 9728 protected-resource metadata in `WWW-Authenticate`, the
 * MCP authorization spec's signal). Only then is the server `auth_required`: a plain 401 means
 * the configured header is wrong or missing, which the owner fixes, so it is an `error`.
 */
export function wantsOAuth(wwwAuthenticate: string | undefined): boolean {
  return wwwAuthenticate !== undefined && /resource_metadata\s*=/i.test(wwwAuthenticate);
}

export interface DiscoveryDeps {
  /**
   * Leases (Redis) that bound an account's discoveries in flight across every instance to
   * `quotas.discoveriesPerAccount` (absent: per instance only).
   */
  accountLeases?: LeaseQuota;
  servers: McpServersRepository;
  /** The headers to reach a custom server, read from the rows the proxy reads them from. */
  credentials: CredentialReader;
  bus: Bus;
  /** Where each recorded discovery's event is written, in the transaction of the record, and published after it. */
  outbox: EventOutbox;
  singleFlight: SingleFlight;
  log: Logger;
  tracer: Tracer;
  meter: Meter;
  /** Builds the fetch used to reach remote servers (outbound safety lives there). */
  fetch?: typeof fetch;
  /** Base of the re-probe backoff (default {@link REPROBE_BACKOFF}.baseMs). */
  reprobeBaseMs?: number;
  /** Floor of the re-list of a list in use when it expires (default {@link RELIST}.floorMs). */
  relistFloorMs?: number;
  /** Bound on concurrent remote discoveries of this instance (default {@link DISCOVERY_LIMITS}.concurrency). */
  concurrency?: number;
  /**
   * An oauth server's token renewed before a discovery when it is about to expire: true when it
   * was (the credentials are read again). A {@link CredentialError} is the discovery's error.
   */
  oauthFreshen?: (server: McpServerRecord, held: ServerCredentials) => Promise<boolean>;
  /**
   * After a 401 on a custom server: headers with a new OAuth client credentials token to try once
   * more, or null when the server does not use that grant (`challenge`: the 401's
   * `resource_metadata`). A refused new token is an `error`: nobody signs in for such a server.
   */
  oauthRenew?: (server: McpServerRecord, used: Record<string, string>, challenge: URL | undefined) => Promise<Record<string, string> | null>;
  /** The owner's per-tool permission overrides, carried on every discovery event. */
  permissions?: ToolPermissionsRepository;
  /**
   * Quotas (`config.quotas`; default {@link DEFAULT_QUOTAS}): `discoveriesPerAccount` of one account
   * run at once on this instance (the rest of that account's wait, holding none of the instance's
   * slots), `discoveryDeadlineMs` bounds one discovery from connect to last page, and after
   * `reprobeMaxFailures` failures in a row the re-prober leaves the server until its owner refreshes it.
   */
  quotas?: Pick<QuotaSettings, 'discoveriesPerAccount' | 'discoveryDeadlineMs' | 'reprobeMaxFailures'>;
  /**
   * Contract pinning: who hears of a change held for review (a pinned server's discoveries are
   * recorded in the outbox's transaction). Absent: pins are not applied (tests of discovery alone).
   */
  pins?: { requested: (server: McpServerRecord, changes: WantedChange[]) => void };
}

/**
 * What a discovery reads and records, and how it authenticates. The default is the account's
 * mcp_servers rows; built-in servers bring their own, and so share the single flight, the
 * concurrency bound, the re-probe backoff, the span and the metrics of custom servers.
 */
export interface DiscoveryTarget {
  /** `custom` or `builtin`, on spans and metrics. */
  readonly kind: string;
  find(account: string, name: string): Promise<McpServerRecord | null>;
  /** Headers to connect with; a {@link CredentialError} is recorded as the discovery's error. */
  headers(server: McpServerRecord): Promise<Record<string, string>>;
  /**
   * After a 401: headers with a renewed credential to try once more, or null when it cannot be
   * renewed (a {@link CredentialError} when renewing failed otherwise). A target with `renew` has
   * every 401 mean `auth_required`; without, only one that asks for OAuth does.
   */
  renew?(server: McpServerRecord, used: Record<string, string>): Promise<Record<string, string> | null>;
  /**
   * Records the outcome (see {@link McpServersRepository.recordDiscovery}) in `trx`, the
   * transaction its event is written in; null when the server went meanwhile.
   */
  record(
    server: McpServerRecord,
    status: ServerStatus,
    tools: { list: RemoteTool[]; hash: string; generation: number } | undefined,
    nextProbeAt: Date | null,
    trx: Kysely<Database>,
  ): Promise<McpServerRecord | null>;
  /** The owner's per-tool overrides, carried on the discovery event (read in `trx` when given). */
  overrides(account: string, serverId: string, trx?: Kysely<Database>): Promise<ToolOverrides | undefined>;
}

interface Outcome {
  tools?: RemoteTool[];
  transport?: Transport;
  /** Listed tools not kept (see {@link screenTools}). */
  skipped?: Array<{ name: string; reason: string }>;
  /** The verdict the connection ran on, when known. */
  verdict?: EraVerdict;
  /** The list's freshness hints, when the server gave them (bounded). */
  hints?: { ttlMs?: number; cacheScope?: 'public' | 'private' };
  error?: string;
  /** The failure in words with what to try (`explainConnectFailure`), when it can be said. */
  summary?: string;
  /** A failure's stable code (see {@link discoveryErrorCode}), for spans and metrics. */
  code?: string;
  authRequired?: boolean;
}

/** How a discovery came by its era verdict: a stored one reused, a fresh probe, or a stored one that failed and was probed again. */
type VerdictOutcome = 'reused' | 'probed' | 'reprobed';

/**
 * Discovery: connect, list every tool, record the result. A failure records the error and keeps
 * the last good list. Concurrent discoveries of one server collapse into one run.
 */
export class Discovery {
  private readonly runs: Counter;
  private readonly verdicts: Counter;
  private readonly relists: Counter;
  private readonly cuts: Counter;
  private readonly held: Counter;
  private readonly duration: Histogram;
  private readonly slots: Semaphore;
  /** Each account's own bound, in front of {@link slots}: one account cannot hold them all. */
  private readonly accountSlots = new Map<string, Semaphore>();
  private readonly quotas: Pick<QuotaSettings, 'discoveriesPerAccount' | 'discoveryDeadlineMs' | 'reprobeMaxFailures'>;
  /** The `resource_metadata` URL of each server's last OAuth challenge (server id → URL), for the OAuth step. */
  private readonly challenges = new Map<string, URL>();
  /** The account's mcp_servers rows: what {@link discover} works on unless told otherwise. */
  private readonly rows: DiscoveryTarget;
  /** Change streams of the modern servers that advertise tools.listChanged (stopped with the re-prober). */
  readonly streams: ListenStreams;

  constructor(private readonly deps: DiscoveryDeps) {
    this.rows = {
      kind: 'custom',
      find: (account, name) => deps.servers.find(account, name),
      headers: async (server) => {
        try {
          // Read as the proxy reads them (`@mcpx/credentials`): only the server's own secrets, each
          // only to the origin it was sealed for, and its OAuth token; renewed first when it is about to expire.
          const held = await deps.credentials.custom(server.accountId, server);
          if (deps.oauthFreshen !== undefined && (await deps.oauthFreshen(server, held))) return (await deps.credentials.custom(server.accountId, server)).headers;
          return held.headers;
        } catch (err) {
          if (err instanceof CredentialError) throw err;
          // A secret sealed with a key that left the ring: the owner sees it, the operator logs it.
          deps.log.error('secret header did not open', { account: server.accountId, server: server.name, err: err as Error });
          throw new CredentialError('a secret header could not be decrypted (its key is not in the key ring); set the header again');
        }
      },
      record: (server, status, tools, nextProbeAt, trx) => deps.servers.recordDiscovery(server.accountId, server.id, status, tools, nextProbeAt, trx),
      overrides: async (account, serverId, trx) => deps.permissions?.forServer(account, serverId, trx),
    };
    this.slots = new Semaphore(deps.concurrency ?? DISCOVERY_LIMITS.concurrency);
    this.quotas = deps.quotas ?? DEFAULT_QUOTAS;
    this.streams = new ListenStreams({ singleFlight: deps.singleFlight, log: deps.log, meter: deps.meter, tracer: deps.tracer });
    this.runs = deps.meter.createCounter('mcpx_discovery_total', { description: 'Discoveries by result (ok, error, auth_required), error code (ok when none), trigger and kind' });
    this.duration = deps.meter.createHistogram('mcpx_discovery_duration_ms', { description: 'Discovery time by result, error code (ok when none), trigger and kind', unit: 'ms' });
    this.cuts = deps.meter.createCounter('mcpx_discovery_bound_cuts_total', { description: 'Response bodies of discoveries cut at a bound of the whole discovery (maxTotalBytes, deadlineMs)' });
    this.held = deps.meter.createCounter('mcpx_pin_changes_held_total', {
      description: "Tool changes a pinned server's discovery held for review, by kind (new, changed) and whether the tool is withheld",
    });
    this.relists = deps.meter.createCounter('mcpx_discovery_relists_total', { description: 'Re-lists of tool lists in use on expiry, armed' });
    this.verdicts = deps.meter.createCounter('mcpx_discovery_era_verdicts_total', { description: 'Era verdicts of discoveries by outcome (reused, probed, reprobed, observed) and era' });
  }

  /**
   * Connects to the server and lists its tools (SetMcpServer, RefreshMcpServer, re-probe), and
   * records the outcome in `target` (default: the mcp_servers rows). Keyed by (account, name):
   * built-in slugs and custom names never meet.
   */
  async discover(server: McpServerRecord, trigger: 'set' | 'authorized' | 'refresh' | 'probe' | 'expired' | 'changed', target: DiscoveryTarget = this.rows): Promise<McpServerRecord> {
    const key = `discovery:${server.accountId}:${server.name}`;
    const opts = { ttlMs: DISCOVERY_LIMITS.connectTimeoutMs + 30_000 };
    const lead = () => this.lead(server, trigger, () => this.perAccount(server.accountId, () => this.slots.run(() => this.probe(server, target))), target);
    // A set carries the config just saved, and `authorized` the credentials just stored (an OAuth
    // callback): joining a background discovery in flight would report that discovery's outcome
    // for the old config or credentials (a 401 right after the right header was saved). They wait
    // for the lock instead and list with their own. A refresh lists the stored config, so it joins
    // whatever discovery of it is under way.
    if (trigger === 'set' || trigger === 'authorized') return this.deps.singleFlight.exclusive(key, opts, lead);
    return this.deps.singleFlight.run(key, opts, lead, async () => (await target.find(server.accountId, server.name)) ?? server);
  }

  /** Runs `fn` under the account's bound of discoveries at once, across instances with `accountLeases` (none when the quota is 0). */
  private async perAccount<T>(account: string, fn: () => Promise<T>): Promise<T> {
    const max = this.quotas.discoveriesPerAccount;
    if (!(max > 0)) return fn();
    let slots = this.accountSlots.get(account);
    if (slots === undefined) {
      slots = new Semaphore(max);
      this.accountSlots.set(account, slots);
    }
    const leases = this.deps.accountLeases;
    try {
      // This instance's share first, then one of the account's places across every instance.
      return await slots.run(() => (leases === undefined ? fn() : withDiscoveryLease(leases, account, max, this.quotas.discoveryDeadlineMs, fn)));
    } finally {
      if (slots.idle && this.accountSlots.get(account) === slots) this.accountSlots.delete(account);
    }
  }

  /**
   * The `resource_metadata` URL (RFC 9728) from the `WWW-Authenticate` of the server's last 401
   * seen by this instance, if any: the OAuth step starts from it instead of guessing well-known
   * paths.
   */
  resourceMetadataUrl(serverId: string): URL | undefined {
    return this.challenges.get(serverId);
  }

  /**
   * Records tools a proxy saw when it opened a connection (a quiet discovery), in whichever target
   * holds the server: the mcp_servers rows first, then each of `others` in order (built-ins), as
   * the proxy's catalog resolves a name. Under the same single flight key as {@link discover}.
   */
  async observed(
    account: string,
    name: string,
    tools: unknown[],
    transport: Transport,
    others: readonly DiscoveryTarget[] = [],
    reported: { verdict?: unknown; authContext?: unknown } = {},
  ): Promise<McpServerRecord | null> {
    let found: { server: McpServerRecord; target: DiscoveryTarget } | undefined;
    for (const target of [this.rows, ...others]) {
      const server = await target.find(account, name);
      if (server !== null) {
        found = { server, target };
        break;
      }
    }
    if (found === undefined) return null;
    const { server, target } = found;
    // Stored before the single flight: a report that joins a discovery in flight is not lost.
    const verdict = parseEraVerdict(reported.verdict);
    if (verdict !== undefined && isAuthContext(reported.authContext)) {
      await this.deps.servers.saveEraVerdict(server.accountId, server.name, reported.authContext, verdict);
      this.verdicts.add(1, { outcome: 'observed', era: verdict.era, kind: target.kind });
    }
    return this.deps.singleFlight.run(
      `discovery:${account}:${name}`,
      { ttlMs: 10_000 },
      () => this.lead(server, 'observed', async () => observedOutcome(tools, transport, verdict), target),
      async () => (await target.find(account, name)) ?? server,
    );
  }

  /** The stored verdict for this auth context, if any (a failed read only costs a probe). */
  private async priorVerdict(server: McpServerRecord, authContext: string): Promise<EraVerdict | undefined> {
    try {
      return parseEraVerdict(await this.deps.servers.eraVerdict(server.accountId, server.name, authContext));
    } catch (err) {
      this.deps.log.warn('era verdict read failed: probing', { account: server.accountId, server: server.name, err: err as Error });
      return undefined;
    }
  }

  /** Stores the verdict a connection probed for (none stored, or the stored one re-probed). */
  private async storeVerdict(server: McpServerRecord, authContext: string, conn: McpConnection, prior: EraVerdict | undefined, kind: string): Promise<VerdictOutcome> {
    const outcome: VerdictOutcome = prior === undefined ? 'probed' : conn.reprobed ? 'reprobed' : 'reused';
    this.verdicts.add(1, { outcome, era: conn.era, kind });
    if (outcome === 'reused') return outcome;
    const verdict = parseEraVerdict(conn.verdict);
    if (verdict === undefined) return outcome;
    await this.deps.servers.saveEraVerdict(server.accountId, server.name, authContext, verdict).catch((err: unknown) => {
      this.deps.log.warn('era verdict not stored', { account: server.accountId, server: server.name, err: err as Error });
    });
    return outcome;
  }

  /**
   * A proxy opened a connection (the server is in use): its list is listed again when it expires
   * (the server's `ttlMs`, floored, jittered), by whichever registry instance's re-prober sees it
   * due first; the discovery lock lets one at a time. Armed once per expiry (a later use does not
   * postpone it); lists without a `ttlMs` keep quiet discovery only. Custom servers only.
   */
  private async armRelist(server: McpServerRecord, status: ServerStatus, target: DiscoveryTarget, now: Date): Promise<void> {
    if (target !== this.rows || status.state !== 'ok' || status.listTtlMs === undefined) return;
    const at = new Date(now.getTime() + relistDelayMs(status.listTtlMs, Math.random, this.deps.relistFloorMs));
    const armed = await this.deps.servers.armRelist(server.accountId, server.id, at).catch((err: unknown) => {
      this.deps.log.warn('re-list not scheduled', { account: server.accountId, server: server.name, err: err as Error });
      return false;
    });
    if (armed) this.relists.add(1, { event: 'armed' });
  }

  /**
   * After a discovery of its own: a modern server that advertises tools.listChanged gets its
   * change stream (held by one registry instance); one that no longer does loses it.
   */
  /**
   * A proxy uses the server: its change stream is wanted too when its stored verdict says it
   * streams changes (so streams come back after a registry restart without waiting for a
   * discovery of this instance). No read when this instance holds the stream already.
   */
  private async followInUse(server: McpServerRecord, target: DiscoveryTarget): Promise<void> {
    if (this.streams.holds(`${server.accountId}:${server.name}`)) return;
    const stored = await this.deps.servers.anyEraVerdict(server.accountId, server.name).catch(() => undefined);
    const verdict = parseEraVerdict(stored);
    if (verdict?.era === 'modern') this.followChanges(server, verdict, target);
  }

  private followChanges(server: McpServerRecord, verdict: EraVerdict, target: DiscoveryTarget): void {
    const key = `${server.accountId}:${server.name}`;
    const capabilities = verdict.era === 'modern' ? (verdict.discover as { capabilities?: { tools?: { listChanged?: unknown } } }).capabilities : undefined;
    if (capabilities?.tools?.listChanged !== true) {
      void this.streams.drop(key);
      return;
    }
    const listen: ListenTarget = {
      key,
      open: async (signal) => {
        const current = await target.find(server.accountId, server.name);
        if (current === null || current.config.url !== server.config.url) return null;
        const headers = await target.headers(current);
        const prior = await this.priorVerdict(current, authContextOf(current.config.url, headers));
        return connectMcp({
          url: current.config.url,
          ...(current.config.transport ? { transport: current.config.transport } : {}),
          headers,
          connectTimeoutMs: DISCOVERY_LIMITS.connectTimeoutMs,
          // What the proxy declares too: a server lists the same tools to both (CONNECTOR_CAPABILITIES).
          capabilities: CONNECTOR_CAPABILITIES,
          ...(this.deps.fetch ? { fetch: this.deps.fetch } : {}),
          ...(prior !== undefined ? { prior } : {}),
          signal,
          traceCarrier,
        });
      },
      changed: async () => {
        const current = await target.find(server.accountId, server.name);
        if (current !== null) await this.discover(current, 'changed', target);
      },
    };
    this.streams.want(listen);
  }

  /**
   * One discovery's exchange with the server: its fetch carries one byte budget
   * ({@link DISCOVERY_LIMITS}.maxTotalBytes) and the discovery's total deadline over every
   * request and body, so a server that answers page after page within each body's bound still
   * stops; the status names the bound that was hit.
   */
  private async probe(server: McpServerRecord, target: DiscoveryTarget): Promise<Outcome> {
    const deadlineMs = this.quotas.discoveryDeadlineMs;
    const budgeted =
      this.deps.fetch &&
      budgetedFetch(this.deps.fetch, {
        maxTotalBytes: DISCOVERY_LIMITS.maxTotalBytes,
        // A moment after the discovery's own deadline (probeWith's): the discovery sees it first
        // and reports it as its deadline (code `deadline`, the setting named); this one cuts a
        // body that did not stop at that signal. Before, this timer fired first and a deadline
        // was a transport error.
        ...(deadlineMs > 0 ? { deadlineMs: deadlineMs + FETCH_DEADLINE_GRACE_MS } : {}),
        onCut: (err) => {
          this.cuts.add(1, { bound: err.details.bound.name, kind: target.kind });
          trace.getActiveSpan()?.addEvent('discovery.bound_cut', { 'mcpx.bound': err.details.bound.name, 'mcpx.bound.limit': err.details.bound.limit });
        },
      });
    // Each JSON-RPC request of the discovery (era probe, every page) its own span.
    const traced = budgeted && tracedRequests(this.deps.tracer, budgeted, { [McpAttributes.server]: server.name, 'mcpx.server_kind': target.kind });
    try {
      return await this.probeWith(server, target, traced);
    } finally {
      budgeted?.end();
    }
  }

  private async probeWith(server: McpServerRecord, target: DiscoveryTarget, fetch: typeof globalThis.fetch | undefined, withoutPrior = false): Promise<Outcome> {
    const deadlineMs = this.quotas.discoveryDeadlineMs;
    // One total deadline from connect to the last page (a server that answers slowly page after page included).
    const deadline = deadlineMs > 0 ? AbortSignal.timeout(deadlineMs) : undefined;
    const overDeadline = (): Outcome => ({ error: `the discovery passed its total deadline of ${deadlineMs} ms (bound ${ResponseBound.deadline}, DISCOVERY_DEADLINE_MS)`, code: 'deadline' });
    let headers: Record<string, string>;
    try {
      headers = await target.headers(server);
    } catch (err) {
      if (err instanceof CredentialError) return { error: err.message, code: 'credential', authRequired: err.authRequired };
      throw err;
    }
    let conn: McpConnection | undefined;
    // The verdict is looked up under the headers actually sent: a renewed credential is another auth context.
    let authContext = '';
    let prior: EraVerdict | undefined;
    // Set once an OAuth client credentials token was renewed for this probe.
    let renewedClientToken = false;
    for (let renewed = false; conn === undefined; renewed = true) {
      authContext = authContextOf(server.config.url, headers);
      prior = withoutPrior ? undefined : await this.priorVerdict(server, authContext);
      try {
        const usedPrior = prior;
        conn = await this.connectSpan(server, target, usedPrior, renewed, () =>
          connectMcp({
            url: server.config.url,
            ...(server.config.transport ? { transport: server.config.transport } : {}),
            headers,
            connectTimeoutMs: DISCOVERY_LIMITS.connectTimeoutMs,
            // What the proxy declares too: a server lists the same tools to both (CONNECTOR_CAPABILITIES).
            capabilities: CONNECTOR_CAPABILITIES,
            ...(fetch ? { fetch } : {}),
            ...(usedPrior !== undefined ? { prior: usedPrior } : {}),
            ...(deadline !== undefined ? { signal: deadline } : {}),
            // A modern request carries the discovery's trace context in its _meta.
            traceCarrier,
          }),
        );
      } catch (err) {
        if (deadline?.aborted === true) return overDeadline();
        const e = err as { code?: string; message?: string; wwwAuthenticate?: string };
        const challenge = e.code === 'unauthorized' ? resourceMetadataUrl(e.wwwAuthenticate) : undefined;
        // A refused credential that can be renewed (a vendor token, a client credentials token): renew it, try once more.
        let next: Record<string, string> | null = null;
        try {
          if (e.code === 'unauthorized' && !renewed) next = target.renew ? await target.renew(server, headers) : ((await this.deps.oauthRenew?.(server, headers, challenge)) ?? null);
        } catch (renewErr) {
          if (renewErr instanceof CredentialError) return { error: renewErr.message, code: 'credential', authRequired: renewErr.authRequired };
          throw renewErr;
        }
        if (next !== null) {
          headers = next;
          renewedClientToken = target.renew === undefined;
          continue;
        }
        if (renewedClientToken && e.code === 'unauthorized')
          return { error: `the server refuses the access token obtained with its OAuth client credentials (${e.message ?? 'unauthorized'})`, code: 'unauthorized' };
        if (challenge !== undefined) {
          this.challenges.set(server.id, challenge);
          if (this.challenges.size > 10_000) this.challenges.delete(this.challenges.keys().next().value as string);
        }
        const summary = explainConnectFailure(err, server.config.url, server.config.auth);
        return {
          error: e.message ?? 'connect failed',
          ...(summary !== undefined ? { summary } : {}),
          code: discoveryErrorCode(err),
          authRequired: e.code === 'unauthorized' && (target.renew !== undefined || wantsOAuth(e.wwwAuthenticate)),
        };
      }
    }
    try {
      const open = conn;
      const listed = await withSpan(
        this.deps.tracer,
        'discovery.list',
        { [McpAttributes.methodName]: 'tools/list', [McpAttributes.server]: server.name, 'mcpx.server_kind': target.kind },
        async (span) => {
          try {
            const out = await open.listToolsWithHints({ maxPages: DISCOVERY_LIMITS.maxPages, ...(deadline !== undefined ? { signal: deadline } : {}) });
            span.setAttributes({ [McpAttributes.outcome]: 'ok', 'mcpx.tools.listed': out.tools.length });
            return out;
          } catch (err) {
            span.setAttributes({ [McpAttributes.outcome]: 'error', [McpAttributes.errorCode]: deadline?.aborted === true ? 'deadline' : discoveryErrorCode(err) });
            throw err;
          }
        },
        { kind: SpanKind.CLIENT },
      );
      const { kept, skipped } = screenTools(sanitizeTools(listed.tools));
      return { tools: kept, transport: conn.transport, skipped, verdict: conn.verdict, hints: listHints(listed) };
    } catch (err) {
      if (deadline?.aborted === true) return overDeadline();
      // A connection adopted from a modern prior makes no round trip: a refused credential is
      // first heard here. Probed again without the prior, the refusal comes at the connect, where
      // it is renewed or recorded as it always is (auth_required for the owner, its challenge).
      const refusedFromPrior = (err as { code?: string }).code === 'unauthorized' && prior !== undefined && !withoutPrior;
      if (!refusedFromPrior) return { error: (err as Error).message ?? 'tools/list failed', code: discoveryErrorCode(err) };
    } finally {
      // After the listing: a modern prior is adopted with no round trip, so a stale one is found
      // out (and re-probed) by the first request, not by the connect.
      const how = await this.storeVerdict(server, authContext, conn, prior, target.kind);
      trace.getActiveSpan()?.setAttributes({ 'mcpx.era': conn.era, 'mcp.protocol.version': conn.protocolVersion, 'mcpx.verdict': how });
      await conn.close().catch(() => undefined);
    }
    // Reached only when the listing was refused for the credential on a connection from a prior.
    return this.probeWith(server, target, fetch, true);
  }

  /**
   * The connect (`discovery.connect`): a modern server's `server/discover` or a legacy
   * `initialize`, an era probe when no verdict is stored, none when a stored modern verdict is
   * adopted. Outcome and error code on the span; never a header or the URL's secrets.
   */
  private async connectSpan(server: McpServerRecord, target: DiscoveryTarget, prior: EraVerdict | undefined, renewed: boolean, connect: () => Promise<McpConnection>): Promise<McpConnection> {
    return withSpan(
      this.deps.tracer,
      'discovery.connect',
      {
        [McpAttributes.server]: server.name,
        'mcpx.server_kind': target.kind,
        'mcpx.prior': prior !== undefined,
        'mcpx.renewed': renewed,
        ...(prior !== undefined ? { [McpAttributes.methodName]: prior.era === 'modern' ? 'server/discover' : 'initialize' } : {}),
      },
      async (span) => {
        try {
          const conn = await connect();
          span.setAttributes({
            [McpAttributes.outcome]: 'ok',
            [McpAttributes.methodName]: conn.era === 'modern' ? 'server/discover' : 'initialize',
            'mcpx.era': conn.era,
            'mcp.protocol.version': conn.protocolVersion,
            'mcpx.era_probe': prior === undefined || conn.reprobed,
          });
          return conn;
        } catch (err) {
          span.setAttributes({ [McpAttributes.outcome]: 'error', [McpAttributes.errorCode]: discoveryErrorCode(err) });
          throw err;
        }
      },
      { kind: SpanKind.CLIENT },
    );
  }

  private async lead(server: McpServerRecord, trigger: string, run: () => Promise<Outcome>, target: DiscoveryTarget): Promise<McpServerRecord> {
    const started = performance.now();
    return withSpan(
      this.deps.tracer,
      'registry.discover',
      {
        'mcp.server': server.name,
        [McpAttributes.server]: server.name,
        'mcp.account': server.accountId,
        'url.full': safeUrlForTelemetry(server.config.url),
        'mcpx.trigger': trigger,
        'mcpx.server_kind': target.kind,
      },
      async (span) => {
        const outcome = await run();
        const now = new Date();
        const previous = server.status;
        let status: ServerStatus;
        let tools: { list: RemoteTool[]; hash: string; generation: number } | undefined;
        let changed = false;
        // A pinned server (custom servers only): agents get the accepted contracts. A listing equal
        // to the last one costs what an unpinned one does (one hash, no tool list written).
        const pins = target === this.rows && pinModeOf(server.config) !== 'off' ? this.deps.pins : undefined;
        let rawChanged = false;
        if (outcome.tools !== undefined) {
          const hash = toolsHash(outcome.tools);
          if (pins !== undefined) {
            rawChanged = hash !== (server.discoveredHash ?? '');
            changed = false;
          } else {
            changed = hash !== server.toolsHash;
            tools = { list: outcome.tools, hash, generation: changed ? server.generation + 1 : server.generation };
          }
          const hints = outcome.hints ?? {
            ...(previous.listTtlMs !== undefined ? { ttlMs: previous.listTtlMs } : {}),
            ...(previous.listCacheScope !== undefined ? { cacheScope: previous.listCacheScope } : {}),
          };
          const era = outcome.verdict ?? (previous.era !== undefined && previous.protocolVersion !== undefined ? { era: previous.era, protocolVersion: previous.protocolVersion } : undefined);
          status = {
            state: 'ok',
            checkedAt: now.toISOString(),
            lastOkAt: now.toISOString(),
            ...(outcome.transport ? { transport: outcome.transport } : {}),
            ...(era !== undefined ? { era: era.era, protocolVersion: era.protocolVersion } : {}),
            ...(outcome.skipped !== undefined && outcome.skipped.length > 0 ? { skippedTools: outcome.skipped } : {}),
            // A proxy's listing carries no hints: the ones of the last discovery stand.
            ...(hints.ttlMs !== undefined ? { listTtlMs: hints.ttlMs } : {}),
            ...(hints.cacheScope !== undefined ? { listCacheScope: hints.cacheScope } : {}),
          };
        } else {
          const failures = (previous.failures ?? 0) + 1;
          status = {
            state: outcome.authRequired ? 'auth_required' : 'error',
            error: outcome.error ?? 'discovery failed',
            ...(outcome.summary !== undefined ? { summary: outcome.summary } : {}),
            checkedAt: now.toISOString(),
            failures,
            ...(previous.lastOkAt ? { lastOkAt: previous.lastOkAt } : {}),
            ...(previous.transport ? { transport: previous.transport } : {}),
            // The last good list stands, and with it what was learnt with it.
            ...(previous.era !== undefined ? { era: previous.era } : {}),
            ...(previous.protocolVersion !== undefined ? { protocolVersion: previous.protocolVersion } : {}),
            ...(previous.skippedTools !== undefined ? { skippedTools: previous.skippedTools } : {}),
          };
        }
        // A proxy reports the tools of every connection it opens: when nothing changed, that is
        // not worth a write or an event.
        if (trigger === 'observed' && !changed && !rawChanged && previous.state === 'ok' && sameStatusFacts(previous, status)) {
          await this.armRelist(server, status, target, now);
          await this.followInUse(server, target);
          return server;
        }
        // After too many failures in a row the re-prober stops; an owner's set or refresh probes again
        // and arms one more re-probe.
        const maxFailures = this.quotas.reprobeMaxFailures;
        const stopped = status.state === 'error' && maxFailures > 0 && (status.failures ?? 1) >= maxFailures && trigger !== 'set' && trigger !== 'authorized' && trigger !== 'refresh';
        if (stopped)
          status = { ...status, error: `${status.error ?? 'discovery failed'} (re-probing stopped after ${status.failures ?? maxFailures} failures in a row: refresh the server to try again)` };
        const nextProbe = status.state === 'error' && !stopped ? new Date(now.getTime() + nextProbeDelayMs(status.failures ?? 1, Math.random, this.deps.reprobeBaseMs)) : null;
        // The record and its event commit together (the outbox): a registry that dies before the
        // publish leaves the event to the next sweep, never to a later discovery.
        const { saved, requested } = await this.deps.outbox.commit(async (trx, emit) => {
          let saved: McpServerRecord | null;
          let requested: WantedChange[] = [];
          const pinned = pins !== undefined && rawChanged && outcome.tools !== undefined ? await recordPinnedDiscovery(trx, server, status, outcome.tools, nextProbe) : null;
          if (pinned !== null) {
            saved = pinned.saved;
            changed = pinned.toolsChanged;
            requested = pinned.requested;
            span.setAttributes({ 'mcpx.pin': pinModeOf(server.config), 'mcpx.pin.requested': requested.length, 'mcpx.pin.withheld': pinned.withheld.length });
          } else if (pins !== undefined && rawChanged && outcome.tools !== undefined) {
            // No longer pinned (changed meanwhile): recorded as any listing.
            const hash = toolsHash(outcome.tools);
            changed = hash !== server.toolsHash;
            saved = await target.record(server, status, { list: outcome.tools, hash, generation: changed ? server.generation + 1 : server.generation }, nextProbe, trx);
          } else saved = await target.record(server, status, tools, nextProbe, trx);
          // Overrides read after the record, in its transaction: never older than its generation (see SetToolPermission).
          if (saved !== null) emit(serverDiscovered(this.deps.bus.subjects, saved, changed, await target.overrides(saved.accountId, saved.id, trx)));
          return { saved, requested };
        });
        if (saved === null) return server; // deleted meanwhile
        if (trigger === 'observed') {
          await this.armRelist(saved, status, target, now);
          await this.followInUse(saved, target);
        } else if (outcome.verdict !== undefined) this.followChanges(saved, outcome.verdict, target);
        if (requested.length > 0) {
          for (const c of requested) this.held.add(1, { kind: c.kind, withheld: c.withheld });
          pins?.requested(saved, requested);
        }
        const result = status.state;
        const code = result === 'ok' ? 'ok' : (outcome.code ?? 'error');
        span.setAttributes({
          'mcpx.result': result,
          [McpAttributes.outcome]: result,
          ...(code !== 'ok' ? { [McpAttributes.errorCode]: code } : {}),
          'mcpx.tools': saved.tools.length,
          'mcpx.tools_changed': changed,
        });
        this.runs.add(1, { result, code, trigger, kind: target.kind });
        this.duration.record(performance.now() - started, { result, code, trigger, kind: target.kind });
        this.deps.log.info('discovery', { account: saved.accountId, server: saved.name, trigger, result, tools: saved.tools.length, changed, kind: target.kind });
        return saved;
      },
      { kind: SpanKind.CLIENT },
    );
  }
}

/** A proxy's report as an outcome; a verdict it probed for (already stored) sets the status' era. */
function observedOutcome(tools: unknown[], transport: Transport, verdict: EraVerdict | undefined): Outcome {
  const { kept, skipped } = screenTools(sanitizeTools(tools));
  return { tools: kept, transport, skipped, ...(verdict !== undefined ? { verdict } : {}) };
}

/** Whether two statuses agree on what a quiet discovery can change besides the list (era, version, skipped tools). */
function sameStatusFacts(a: ServerStatus, b: ServerStatus): boolean {
  return a.era === b.era && a.protocolVersion === b.protocolVersion && JSON.stringify(a.skippedTools ?? []) === JSON.stringify(b.skippedTools ?? []);
}
