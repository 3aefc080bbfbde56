import type { Counter } from '@opentelemetry/api';
import type { ServerStatus } from '@mcpx/contracts';
import type { Logger } from '@mcpx/log';
import { CONNECTOR_CAPABILITIES, connectMcp, type EraVerdict } from '@mcpx/mcp-client';
import { traceCarrier } from '@mcpx/telemetry';
import type { McpServerRecord, McpServersRepository } from '../catalog/mcp-servers.repository.js';
import { relistDelayMs } from './discovery-schedule.js';
import { DISCOVERY_LIMITS, type DiscoveryTarget } from './discovery-types.js';
import { authContextOf, parseEraVerdict } from './era-verdicts.js';
import type { ListenStreams, ListenTarget } from './listen-streams.js';
import type { VerdictStore } from './verdict-store.js';

export interface ChangeFollowerDeps {
  servers: Pick<McpServersRepository, 'armRelist' | 'anyEraVerdict'>;
  log: Logger;
  /** The fetch discoveries reach remote servers with (outbound safety lives there). */
  fetch?: typeof fetch;
  /** Floor of the re-list of a list in use when it expires (default `RELIST.floorMs`). */
  relistFloorMs?: number;
  streams: ListenStreams;
  verdicts: VerdictStore;
  /** Re-lists armed (`mcpx_discovery_relists_total`). */
  relists: Counter;
  /** The account's own rows: only custom servers are re-listed on expiry. */
  rows: DiscoveryTarget;
  /** A discovery on a change the server announced. */
  discover: (server: McpServerRecord, target: DiscoveryTarget) => Promise<unknown>;
}

/**
 * How a discovered list stays fresh after its discovery: a list in use is listed again when it
 * expires, and a modern server that announces tool changes gets a change stream that lists it
 * again on each.
 */
export class ChangeFollower {
  constructor(private readonly deps: ChangeFollowerDeps) {}

  /**
   * A proxy opened a connection (the server is in use): its list is listed again when it expires
   * (the server's `ttlMs`, floored, jittered), by whichever registry instance's re-prober sees it
   * due first; the discovery lock lets one at a time. Armed once per expiry (a later use does not
   * postpone it); lists without a `ttlMs` keep quiet discovery only. Custom servers only.
   */
  async armRelist(server: McpServerRecord, status: ServerStatus, target: DiscoveryTarget, now: Date): Promise<void> {
    if (target !== this.deps.rows || status.state !== 'ok' || status.listTtlMs === undefined) return;
    const at = new Date(now.getTime() + relistDelayMs(status.listTtlMs, Math.random, this.deps.relistFloorMs));
    const armed = await this.deps.servers.armRelist(server.accountId, server.id, at).catch((err: unknown) => {
      this.deps.log.warn('re-list not scheduled', {
        account: server.accountId,
        server: server.name,
        err: err as Error,
      });
      return false;
    });
    if (armed) this.deps.relists.add(1, { event: 'armed' });
  }

  /**
   * A proxy uses the server: its change stream is wanted too when its stored verdict says it
   * streams changes (so streams come back after a registry restart without waiting for a
   * discovery of this instance). No read when this instance holds the stream already.
   */
  async followInUse(server: McpServerRecord, target: DiscoveryTarget): Promise<void> {
    if (this.deps.streams.holds(`${server.accountId}:${server.name}`)) return;
    const stored = await this.deps.servers.anyEraVerdict(server.accountId, server.name).catch(() => undefined);
    const verdict = parseEraVerdict(stored);
    if (verdict?.era === 'modern') this.follow(server, verdict, target);
  }

  /**
   * After a discovery of its own: a modern server that advertises tools.listChanged gets its
   * change stream (held by one registry instance); one that no longer does loses it.
   */
  follow(server: McpServerRecord, verdict: EraVerdict, target: DiscoveryTarget): void {
    const key = `${server.accountId}:${server.name}`;
    const capabilities =
      verdict.era === 'modern'
        ? (verdict.discover as { capabilities?: { tools?: { listChanged?: unknown } } }).capabilities
        : undefined;
    if (capabilities?.tools?.listChanged !== true) {
      void this.deps.streams.drop(key);
      return;
    }
    const listen: ListenTarget = {
      key,
      open: async (signal) => {
        const current = await target.find(server.accountId, server.name);
        if (current === null || current.config.url !== server.config.url) return null;
        const headers = await target.headers(current);
        const prior = await this.deps.verdicts.prior(current, authContextOf(current.config.url, headers));
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
        if (current !== null) await this.deps.discover(current, target);
      },
    };
    this.deps.streams.want(listen);
  }
}
