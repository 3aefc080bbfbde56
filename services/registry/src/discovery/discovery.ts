import { SpanKind, type Counter, type Histogram, type Span } from '@opentelemetry/api';
import type { ServerStatus, Transport } from '@mcpx/contracts';
import { DEFAULT_QUOTAS, type QuotaSettings } from '@mcpx/config';
import type { RemoteTool } from '@mcpx/domain';
import { McpAttributes, safeUrlForTelemetry, withSpan } from '@mcpx/telemetry';
import type { McpServerRecord } from '../catalog/mcp-servers.repository.js';
import { toolsHash } from '../catalog/remote-tools.js';
import { serverDiscovered } from '../catalog/server-events.js';
import { pinModeOf, type WantedChange } from '../review/pin-policy.js';
import { recordPinnedDiscovery } from '../review/pin-store.js';
import { Semaphore } from '../shared/semaphore.js';
import { ChangeFollower } from './change-follower.js';
import { customRows } from './custom-rows.js';
import { withDiscoveryLease } from './discovery-leases.js';
import { nextProbeDelayMs } from './discovery-schedule.js';
import {
  observedOutcome,
  sameStatusFacts,
  statusAfter,
  storeLostOutcome,
  withReprobeStop,
  type StatusChange,
} from './discovery-status.js';
import { DISCOVERY_LIMITS, type DiscoveryDeps, type DiscoveryTarget, type ProbeOutcome } from './discovery-types.js';
import { isAuthContext, parseEraVerdict } from './era-verdicts.js';
import { ListenStreams } from './listen-streams.js';
import { OwedDiscoveries } from './owed-discoveries.js';
import { DiscoveryProbe } from './probe.js';
import { VerdictStore } from './verdict-store.js';

export type { DiscoveryTarget } from './discovery-types.js';

/** A server's discovery lock: renewed while its holder runs; a crashed holder's expires within this. */
const DISCOVERY_LOCK = { ttlMs: DISCOVERY_LIMITS.connectTimeoutMs + 30_000 };

/** The pins of a discovery of a pinned server (absent: not pinned, or pins not applied). */
type Pins = NonNullable<DiscoveryDeps['pins']>;

/**
 * Discovery: connect, list every tool, record the result. A failure records the error and keeps
 * the last good list. Concurrent discoveries of one server collapse into one run. The exchange
 * with the server is the probe's (./probe.ts), the status an outcome makes ./discovery-status.ts's,
 * keeping a list fresh afterwards the change follower's (./change-follower.ts).
 */
export class Discovery {
  private readonly runs: Counter;
  private readonly held: Counter;
  private readonly duration: Histogram;
  private readonly slots: Semaphore;
  /** Each account's own bound, in front of {@link slots}: one account cannot hold them all. */
  private readonly accountSlots = new Map<string, Semaphore>();
  private readonly quotas: Pick<QuotaSettings, 'discoveriesPerAccount' | 'discoveryDeadlineMs' | 'reprobeMaxFailures'>;
  /** The account's mcp_servers rows: what {@link discover} works on unless told otherwise. */
  private readonly rows: DiscoveryTarget;
  private readonly verdicts: VerdictStore;
  private readonly probe: DiscoveryProbe;
  private readonly follower: ChangeFollower;
  /** Change streams of the modern servers that advertise tools.listChanged (stopped with the re-prober). */
  readonly streams: ListenStreams;
  /** Set discoveries whose record Postgres refused, run again by this instance (stopped with the re-prober). */
  private readonly owed: OwedDiscoveries;

  constructor(private readonly deps: DiscoveryDeps) {
    this.rows = customRows(deps);
    this.slots = new Semaphore(deps.concurrency ?? DISCOVERY_LIMITS.concurrency);
    this.quotas = deps.quotas ?? DEFAULT_QUOTAS;
    this.streams = new ListenStreams({
      singleFlight: deps.singleFlight,
      log: deps.log,
      meter: deps.meter,
      tracer: deps.tracer,
    });
    this.owed = new OwedDiscoveries(this.rows, (s) => this.discover(s, 'probe'), deps, this.quotas.reprobeMaxFailures);
    const meter = deps.meter;
    this.runs = meter.createCounter('mcpx_discovery_total', {
      description: 'Discoveries by result (ok, error, auth_required), error code (ok when none), trigger and kind',
    });
    this.duration = meter.createHistogram('mcpx_discovery_duration_ms', {
      description: 'Discovery time by result, error code (ok when none), trigger and kind',
      unit: 'ms',
    });
    const cuts = meter.createCounter('mcpx_discovery_bound_cuts_total', {
      description: 'Response bodies of discoveries cut at a bound of the whole discovery (maxTotalBytes, deadlineMs)',
    });
    this.held = meter.createCounter('mcpx_pin_changes_held_total', {
      description:
        "Tool changes a pinned server's discovery held for review, by kind (new, changed) and whether the tool is withheld",
    });
    const relists = meter.createCounter('mcpx_discovery_relists_total', {
      description: 'Re-lists of tool lists in use on expiry, armed',
    });
    const verdicts = meter.createCounter('mcpx_discovery_era_verdicts_total', {
      description: 'Era verdicts of discoveries by outcome (reused, probed, reprobed, observed) and era',
    });
    this.verdicts = new VerdictStore(deps.servers, verdicts, deps.log);
    const fetch = deps.fetch !== undefined ? { fetch: deps.fetch } : {};
    const oauthRenew = deps.oauthRenew !== undefined ? { oauthRenew: deps.oauthRenew } : {};
    this.probe = new DiscoveryProbe({
      tracer: deps.tracer,
      verdicts: this.verdicts,
      cuts,
      deadlineMs: () => this.quotas.discoveryDeadlineMs,
      ...fetch,
      ...oauthRenew,
    });
    this.follower = new ChangeFollower({
      servers: deps.servers,
      log: deps.log,
      ...fetch,
      ...(deps.relistFloorMs !== undefined ? { relistFloorMs: deps.relistFloorMs } : {}),
      streams: this.streams,
      verdicts: this.verdicts,
      relists,
      rows: this.rows,
      discover: (server, target) => this.discover(server, 'changed', target),
    });
  }

  /**
   * Connects to the server and lists its tools (RefreshMcpServer, an OAuth callback, re-probe),
   * and records the outcome in `target` (default: the mcp_servers rows). Keyed by (account, name):
   * built-in slugs and custom names never meet. SetMcpServer's discovery is {@link saveAndDiscover}.
   */
  async discover(
    server: McpServerRecord,
    trigger: 'authorized' | 'refresh' | 'probe' | 'expired' | 'changed',
    target: DiscoveryTarget = this.rows,
  ): Promise<McpServerRecord> {
    const key = discoveryKey(server.accountId, server.name);
    const lead = () =>
      this.lead(
        server,
        trigger,
        () => this.perAccount(server.accountId, () => this.slots.run(() => this.probe.run(server, target))),
        target,
      );
    // `authorized` carries the credentials just stored (an OAuth callback): joining a background
    // discovery in flight would report that discovery's outcome for the old credentials (a 401
    // right after the right token was stored). It waits for the lock instead and lists with its
    // own. A refresh lists the stored config, so it joins whatever discovery of it is under way.
    if (trigger === 'authorized') return this.deps.singleFlight.exclusive(key, DISCOVERY_LOCK, lead);
    return this.deps.singleFlight.run(
      key,
      DISCOVERY_LOCK,
      lead,
      async () => (await target.find(server.accountId, server.name)) ?? server,
    );
  }

  /**
   * SetMcpServer: writes the server with `save`, then lists its tools, every Redis admission of
   * the discovery taken before `save` writes anything: the server's discovery lock (like
   * `authorized`, a set waits for a discovery in flight rather than joining it: that one lists
   * the old config) and one of the account's places in flight. So a Redis outage, or the places
   * held past their wait, refuses the set with nothing written. Once saved, a store lost is a
   * failed discovery and the set is answered as saved: lost during the listing, it is recorded as
   * any failure; lost at the record, nothing is stored and the discovery is owed ({@link OwedDiscoveries}).
   */
  async saveAndDiscover(account: string, name: string, save: () => Promise<McpServerRecord>): Promise<McpServerRecord> {
    return this.deps.singleFlight.exclusive(discoveryKey(account, name), DISCOVERY_LOCK, () =>
      this.perAccount(account, async () => {
        const server = await save();
        const listed = () => this.slots.run(() => this.probe.run(server, this.rows)).catch(storeLostOutcome);
        return this.lead(server, 'set', listed, this.rows).catch((err: unknown) => this.owed.unrecorded(server, err));
      }),
    );
  }

  /** Stops the change streams and the discoveries owed (shutdown, with the re-prober). */
  async stop(): Promise<void> {
    await Promise.all([this.streams.stop(), this.owed.stop()]);
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
      return await slots.run(() =>
        leases === undefined ? fn() : withDiscoveryLease(leases, account, max, this.quotas.discoveryDeadlineMs, fn),
      );
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
    return this.probe.challenges.get(serverId);
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
    if (verdict !== undefined && isAuthContext(reported.authContext))
      await this.verdicts.observed(server, reported.authContext, verdict, target.kind);
    return this.deps.singleFlight.run(
      discoveryKey(account, name),
      { ttlMs: 10_000 },
      () => this.lead(server, 'observed', async () => observedOutcome(tools, transport, verdict), target),
      async () => (await target.find(account, name)) ?? server,
    );
  }

  /** Runs one discovery's outcome to its record (`registry.discover`): the status, the record with its event, what follows it, the figures. */
  private async lead(
    server: McpServerRecord,
    trigger: string,
    run: () => Promise<ProbeOutcome>,
    target: DiscoveryTarget,
  ): Promise<McpServerRecord> {
    const started = performance.now();
    const attributes = {
      'mcp.server': server.name,
      [McpAttributes.server]: server.name,
      'mcp.account': server.accountId,
      'url.full': safeUrlForTelemetry(server.config.url),
      'mcpx.trigger': trigger,
      'mcpx.server_kind': target.kind,
    };
    return withSpan(
      this.deps.tracer,
      'registry.discover',
      attributes,
      async (span) => {
        const outcome = await run();
        const now = new Date();
        // A pinned server (custom servers only): agents get the accepted contracts.
        const pins = target === this.rows && pinModeOf(server.config) !== 'off' ? this.deps.pins : undefined;
        const change = statusAfter(server, outcome, now, pins !== undefined);
        // A proxy reports the tools of every connection it opens: when nothing changed, that is
        // not worth a write or an event.
        if (
          trigger === 'observed' &&
          !change.changed &&
          !change.rawChanged &&
          server.status.state === 'ok' &&
          sameStatusFacts(server.status, change.status)
        ) {
          await this.follower.armRelist(server, change.status, target, now);
          await this.follower.followInUse(server, target);
          return server;
        }
        const { status, stopped } = withReprobeStop(change.status, trigger, this.quotas.reprobeMaxFailures);
        const nextProbe =
          status.state === 'error' && !stopped
            ? new Date(now.getTime() + nextProbeDelayMs(status.failures ?? 1, Math.random, this.deps.reprobeBaseMs))
            : null;
        const recorded = await this.record(server, target, { ...change, status }, outcome.tools, nextProbe, pins, span);
        if (target === this.rows) this.owed.settled(server.accountId, server.name);
        if (recorded.saved === null) return server; // deleted meanwhile
        const saved = recorded.saved;
        if (trigger === 'observed') {
          await this.follower.armRelist(saved, status, target, now);
          await this.follower.followInUse(saved, target);
        } else if (outcome.verdict !== undefined) this.follower.follow(saved, outcome.verdict, target);
        if (recorded.requested.length > 0) {
          for (const c of recorded.requested) this.held.add(1, { kind: c.kind, withheld: c.withheld });
          pins?.requested(saved, recorded.requested);
        }
        this.report(span, saved, status.state, outcome, {
          trigger,
          kind: target.kind,
          changed: recorded.changed,
          started,
        });
        return saved;
      },
      { kind: SpanKind.CLIENT },
    );
  }

  /**
   * The record and its event, committed together (the outbox): a registry that dies before the
   * publish leaves the event to the next sweep, never to a later discovery. A pinned server's
   * changed listing is weighed by its pins; null when the server went meanwhile.
   */
  private async record(
    server: McpServerRecord,
    target: DiscoveryTarget,
    change: StatusChange,
    listed: RemoteTool[] | undefined,
    nextProbe: Date | null,
    pins: Pins | undefined,
    span: Span,
  ): Promise<{ saved: McpServerRecord | null; requested: WantedChange[]; changed: boolean }> {
    const { status } = change;
    return this.deps.outbox.commit(async (trx, emit) => {
      let saved: McpServerRecord | null;
      let changed = change.changed;
      let requested: WantedChange[] = [];
      const pinned =
        pins !== undefined && change.rawChanged && listed !== undefined
          ? await recordPinnedDiscovery(trx, server, status, listed, nextProbe)
          : null;
      if (pinned !== null) {
        saved = pinned.saved;
        changed = pinned.toolsChanged;
        requested = pinned.requested;
        span.setAttributes({
          'mcpx.pin': pinModeOf(server.config),
          'mcpx.pin.requested': requested.length,
          'mcpx.pin.withheld': pinned.withheld.length,
        });
      } else if (pins !== undefined && change.rawChanged && listed !== undefined) {
        // No longer pinned (changed meanwhile): recorded as any listing.
        const hash = toolsHash(listed);
        changed = hash !== server.toolsHash;
        saved = await target.record(
          server,
          status,
          { list: listed, hash, generation: changed ? server.generation + 1 : server.generation },
          nextProbe,
          trx,
        );
      } else saved = await target.record(server, status, change.tools, nextProbe, trx);
      // Overrides read after the record, in its transaction: never older than its generation (see SetToolPermission).
      if (saved !== null)
        emit(
          serverDiscovered(
            this.deps.bus.subjects,
            saved,
            changed,
            await target.overrides(saved.accountId, saved.id, trx),
          ),
        );
      return { saved, requested, changed };
    });
  }

  /** A recorded discovery on its span, in its metrics and its log line. */
  private report(
    span: Span,
    saved: McpServerRecord,
    result: ServerStatus['state'],
    outcome: ProbeOutcome,
    run: { trigger: string; kind: string; changed: boolean; started: number },
  ): void {
    const code = result === 'ok' ? 'ok' : (outcome.code ?? 'error');
    span.setAttributes({
      'mcpx.result': result,
      [McpAttributes.outcome]: result,
      ...(code !== 'ok' ? { [McpAttributes.errorCode]: code } : {}),
      'mcpx.tools': saved.tools.length,
      'mcpx.tools_changed': run.changed,
    });
    const labels = { result, code, trigger: run.trigger, kind: run.kind };
    this.runs.add(1, labels);
    this.duration.record(performance.now() - run.started, labels);
    this.deps.log.info('discovery', {
      account: saved.accountId,
      server: saved.name,
      trigger: run.trigger,
      result,
      tools: saved.tools.length,
      changed: run.changed,
      kind: run.kind,
    });
  }
}

/** The single flight key of a server's discoveries: (account, name), built-in slugs and custom names never meet. */
function discoveryKey(account: string, name: string): string {
  return `discovery:${account}:${name}`;
}
