import type { Kysely } from 'kysely';
import type { Bus } from '@mcpx/bus';
import type { Database } from '@mcpx/db';
import type { ServerDeletedEvent, ServerDiscoveredEvent, ServerStatus } from '@mcpx/contracts';
import { builtinEndpoint, builtinServerId, builtinsOfVendor, findBuiltin, type BuiltinServer, type RemoteTool } from '@mcpx/domain';
import type { Logger } from '@mcpx/log';
import { connectMcp } from '@mcpx/mcp-client';
import { DISCOVERY_LIMITS, sanitizeTools, toolsHash } from '../discovery.js';
import type { McpServerRecord } from '../repositories/mcp-servers.repository.js';
import type { BuiltinDiscoveriesRepository, BuiltinDiscovery } from './builtin-discoveries.repository.js';
import type { VendorConnection, VendorConnectionsRepository, VendorTokens } from './vendor-connections.repository.js';

export interface BuiltinServersDeps {
  connections: VendorConnectionsRepository;
  discoveries: BuiltinDiscoveriesRepository;
  bus: Bus;
  log: Logger;
  /** The operator's endpoint overrides (`BUILTIN_ENDPOINTS`). */
  endpoints: Record<string, string>;
  /** The outbound-safe fetch discovery uses. */
  fetch?: typeof fetch;
}

/**
 * Built-in servers for an account (seed 001): a vendor connection lights up the vendor's
 * built-ins with no mcp_servers row. Each shows as a server record (`id` = builtin:<slug>:<connection>)
 * whose tools are its last discovery for the account, else the descriptor's fallback list, and
 * reaches the projector through the ordinary discovery events.
 */
export class BuiltinServers {
  constructor(private readonly deps: BuiltinServersDeps) {}

  /** Every built-in the account's vendor connections light up, by slug. */
  async lit(account: string): Promise<McpServerRecord[]> {
    const [connections, discoveries] = await Promise.all([this.deps.connections.list(account), this.deps.discoveries.list(account)]);
    return connections.flatMap((c) => builtinsOfVendor(c.vendor).map((b) => this.record(account, b, c, discoveries.get(b.slug)))).sort((a, b) => a.name.localeCompare(b.name));
  }

  /** The built-in `slug` if the account's vendor connection lights it up. */
  async find(account: string, slug: string): Promise<McpServerRecord | null> {
    return (await this.lit(account)).find((s) => s.name === slug) ?? null;
  }

  /** Stores the vendor's tokens (sealed) and publishes its built-ins' tools (a new token invalidates proxies' caches too). */
  async connect(account: string, vendor: string, tokens: VendorTokens): Promise<McpServerRecord[]> {
    await this.deps.connections.put(account, vendor, tokens);
    const lit = (await this.lit(account)).filter((s) => findBuiltin(s.name)?.vendor === vendor);
    for (const server of lit) await this.publish(server, true);
    return lit;
  }

  /** Deletes the vendor connection (in the caller's transaction); null when there was none. */
  removeConnection(account: string, vendor: string, trx: Kysely<Database>): Promise<VendorConnection | null> {
    return this.deps.connections.delete(account, vendor, trx);
  }

  /** After a vendor connection is deleted: its built-ins' documents go (an event per built-in). */
  async disconnected(account: string, connection: VendorConnection): Promise<void> {
    const slugs = builtinsOfVendor(connection.vendor).map((b) => b.slug);
    await this.deps.discoveries.deleteSlugs(account, slugs);
    for (const slug of slugs) {
      const serverId = builtinServerId(slug, connection.id);
      const event: ServerDeletedEvent = { account, server: slug, serverId };
      await this.deps.bus.publishEvent(this.deps.bus.subjects.serverDeleted(account, slug), event, `deleted-${serverId}`);
    }
  }

  /** RefreshMcpServer on a built-in: discovers from its endpoint with the vendor's token. */
  async refresh(server: McpServerRecord): Promise<McpServerRecord> {
    const builtin = findBuiltin(server.name);
    const token = builtin ? await this.deps.connections.accessToken(server.accountId, builtin.vendor) : null;
    if (builtin === undefined || token === null) return server;
    const now = new Date().toISOString();
    let status: ServerStatus;
    let tools: RemoteTool[] | undefined;
    try {
      const conn = await connectMcp({
        url: server.config.url,
        headers: { authorization: `Bearer ${token}` },
        connectTimeoutMs: DISCOVERY_LIMITS.connectTimeoutMs,
        ...(this.deps.fetch ? { fetch: this.deps.fetch } : {}),
      });
      try {
        tools = sanitizeTools(await conn.listTools({ maxPages: DISCOVERY_LIMITS.maxPages }));
        status = { state: 'ok', checkedAt: now, lastOkAt: now, transport: conn.transport };
      } finally {
        await conn.close().catch(() => undefined);
      }
    } catch (err) {
      const e = err as { code?: string; message?: string };
      // A refused vendor token is the vendor connection's to renew, not a broken server.
      status = { state: e.code === 'unauthorized' ? 'auth_required' : 'error', error: e.message ?? 'discovery failed', checkedAt: now, ...(server.status.lastOkAt ? { lastOkAt: server.status.lastOkAt } : {}) };
    }
    const hash = tools ? toolsHash(tools) : server.toolsHash;
    const changed = hash !== server.toolsHash;
    const generation = changed ? server.generation + 1 : server.generation;
    await this.deps.discoveries.record(server.accountId, server.name, status, tools ? { list: tools, hash, generation } : undefined);
    const saved: McpServerRecord = { ...server, ...(tools ? { tools, toolsHash: hash, generation } : {}), status, updatedAt: new Date() };
    await this.publish(saved, changed);
    this.deps.log.info('discovery', { account: server.accountId, server: server.name, trigger: 'refresh', result: status.state, tools: saved.tools.length, changed, builtin: true });
    return saved;
  }

  private async publish(server: McpServerRecord, toolsChanged: boolean): Promise<void> {
    const event: ServerDiscoveredEvent = { account: server.accountId, server: server.name, serverId: server.id, generation: server.generation, tools: server.tools, status: server.status, toolsChanged };
    await this.deps.bus.publishEvent(this.deps.bus.subjects.serverDiscovered(server.accountId, server.name), event);
  }

  private record(account: string, builtin: BuiltinServer, connection: VendorConnection, discovery: BuiltinDiscovery | undefined): McpServerRecord {
    // Never discovered (or only failures so far): the checked-in fallback list serves, generation 0.
    const discovered = discovery !== undefined && discovery.toolsHash !== '';
    const tools = discovered ? discovery.tools : builtin.fallbackTools.map((t) => ({ ...t }));
    return {
      id: builtinServerId(builtin.slug, connection.id),
      accountId: account,
      name: builtin.slug,
      config: { url: builtinEndpoint(builtin, this.deps.endpoints), auth: 'oauth' },
      tools,
      toolsHash: discovered ? discovery.toolsHash : toolsHash(tools),
      generation: discovered ? discovery.generation : 0,
      status: discovery?.status ?? { state: 'unknown' },
      createdAt: connection.createdAt,
      updatedAt: discovery?.updatedAt ?? connection.updatedAt,
    };
  }
}
