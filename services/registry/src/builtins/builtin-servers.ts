import type { Kysely } from 'kysely';
import type { Bus } from '@mcpx/bus';
import { ErrorCodes, WireError, type ServerStatus } from '@mcpx/contracts';
import type { Database, Db } from '@mcpx/db';
import {
  BUILTIN_SERVERS,
  builtinEndpoint,
  builtinServerId,
  builtinsOfVendor,
  findBuiltin,
  findVendor,
  type BuiltinServer,
  type Permission,
  type RemoteTool,
} from '@mcpx/domain';
import type { Logger } from '@mcpx/log';
import type { Discovery, DiscoveryTarget } from '../discovery/discovery.js';
import { nextProbeDelayMs } from '../discovery/discovery-schedule.js';
import { toolsHash } from '../catalog/remote-tools.js';
import { CredentialError } from '../shared/credential-error.js';
import type { EventOutbox, OutboxEvent } from '../events/outbox.js';
import { serverDeleted, serverDiscovered } from '../catalog/server-events.js';
import { accessTokenHash } from '../credentials/oauth/access-tokens.js';
import type { McpServerRecord } from '../catalog/mcp-servers.repository.js';
import type { ToolOverrides, ToolPermissionsRepository } from '../catalog/tool-permissions.repository.js';
import type { ReprobeSource } from '../discovery/reprober.js';
import type { BuiltinDiscoveriesRepository, BuiltinDiscovery } from './builtin-discoveries.repository.js';
import type {
  VendorConnection,
  VendorConnectionsRepository,
  VendorTokens,
} from '../credentials/vendor-connections.repository.js';
import type { VendorCredentials, VendorRefreshOutcome } from '../credentials/vendor-credentials.js';
import { expiring, type CredentialReader } from '@mcpx/stored';

export interface BuiltinServersDeps {
  db: Db;
  connections: VendorConnectionsRepository;
  discoveries: BuiltinDiscoveriesRepository;
  credentials: VendorCredentials;
  permissions: ToolPermissionsRepository;
  /** The discovery custom servers use: its single flight, concurrency bound, backoff, span and metrics. */
  discovery: Discovery;
  bus: Bus;
  /** The built-ins' events (discovered, deleted) are written with the commit of their change and published after it. */
  outbox: EventOutbox;
  /** A built-in's headers, read as the proxy reads them (the vendor connection's token). */
  credentialReader: CredentialReader;
  log: Logger;
  /** The operator's endpoint overrides (`BUILTIN_ENDPOINTS`). */
  endpoints: Record<string, string>;
  /** Base of the re-probe backoff (default that of custom servers). */
  reprobeBaseMs?: number;
}

/**
 * Built-in servers for an account (docs/servers.md#built-in-servers): a vendor connection lights up the vendor's
 * built-ins with no mcp_servers row. Each shows as a server record (`id` = builtin:<slug>:<connection>)
 * whose tools are its last discovery for the account, else the descriptor's fallback list, and
 * reaches the projector through the ordinary discovery events.
 *
 * It is the {@link DiscoveryTarget} of its discoveries (records go to builtin_discoveries, the
 * credential is the vendor's token, renewed on a 401) and a {@link ReprobeSource}: a lit built-in
 * is probed in the background once its backoff is due, while `unknown` or in `error`.
 */
export class BuiltinServers implements DiscoveryTarget, ReprobeSource {
  readonly kind = 'builtin';

  constructor(private readonly deps: BuiltinServersDeps) {}

  get target(): DiscoveryTarget {
    return this;
  }

  /** Every built-in the account's vendor connections light up, by slug. */
  async lit(account: string, trx?: Kysely<Database>): Promise<McpServerRecord[]> {
    // One query at a time in a transaction (a connection runs one); two at once otherwise.
    const [connections, discoveries] =
      trx !== undefined
        ? [await this.deps.connections.list(account, trx), await this.deps.discoveries.list(account, trx)]
        : await Promise.all([this.deps.connections.list(account), this.deps.discoveries.list(account)]);
    return connections
      .flatMap((c) => builtinsOfVendor(c.vendor).map((b) => this.toRecord(account, b, c, discoveries.get(b.slug))))
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  /** The built-in `slug` if the account's vendor connection lights it up. */
  async find(account: string, slug: string, trx?: Kysely<Database>): Promise<McpServerRecord | null> {
    if (findBuiltin(slug) === undefined) return null;
    return (await this.lit(account, trx)).find((s) => s.name === slug) ?? null;
  }

  /**
   * Stores the vendor's tokens (sealed) and publishes its built-ins' tools (a new token invalidates
   * proxies' caches too). A built-in just lit, or waiting for this connection (`auth_required`),
   * becomes `unknown` with a background probe after the first backoff step. `opening` is called
   * first and `recorded` (with the lit built-ins) last in the connection's transaction: what they
   * write or read there (the account's row; the audit entry, the answer's overrides) commits with
   * the connection or not at all.
   */
  async connect(
    account: string,
    vendor: string,
    tokens: VendorTokens,
    hooks: {
      /** Called first in the connection's transaction: what it writes (the account's row) commits with the connection. */
      opening: (trx: Kysely<Database>) => Promise<void>;
      recorded: (lit: McpServerRecord[], trx: Kysely<Database>) => Promise<void>;
    },
  ): Promise<McpServerRecord[]> {
    // The connection and its built-ins' events commit together.
    return this.deps.outbox.commit(async (trx, emit) => {
      await hooks.opening(trx);
      await this.deps.connections.put(account, vendor, tokens, trx);
      const discoveries = await this.deps.discoveries.list(account, trx);
      const due = new Date(Date.now() + nextProbeDelayMs(1, Math.random, this.deps.reprobeBaseMs));
      for (const b of builtinsOfVendor(vendor)) {
        const state = discoveries.get(b.slug)?.status.state;
        if (state === undefined || state === 'auth_required')
          await this.deps.discoveries.schedule(account, b.slug, due, trx);
      }
      const lit = (await this.lit(account, trx)).filter((s) => findBuiltin(s.name)?.vendor === vendor);
      for (const server of lit) emit(await this.discoveredEvent(server, true, undefined, trx));
      await hooks.recorded(lit, trx);
      return lit;
    });
  }

  /** Deletes the vendor connection (in the caller's transaction; its overrides go with it); null when there was none. */
  removeConnection(account: string, vendor: string, trx: Kysely<Database>): Promise<VendorConnection | null> {
    return this.deps.connections.delete(account, vendor, trx);
  }

  /**
   * In the transaction that deleted a vendor connection: its built-ins' discoveries go, and their
   * documents with them (a deleted event per built-in, for the caller's outbox).
   */
  async disconnected(account: string, connection: VendorConnection, trx: Kysely<Database>): Promise<OutboxEvent[]> {
    const slugs = builtinsOfVendor(connection.vendor).map((b) => b.slug);
    await this.deps.discoveries.deleteSlugs(account, slugs, trx);
    return slugs.map((slug) =>
      serverDeleted(this.deps.bus.subjects, account, slug, builtinServerId(slug, connection.id)),
    );
  }

  /** RefreshMcpServer on a built-in: a discovery from its endpoint with the vendor's token. */
  refresh(server: McpServerRecord): Promise<McpServerRecord> {
    return this.deps.discovery.discover(server, 'refresh', this);
  }

  /**
   * SetToolPermission on a built-in: the override is keyed by its server id (this incarnation of
   * the vendor connection), its generation moves on under the connection's row lock, and the
   * discovery event carries the tools and every override, as for a custom server. `recorded` is
   * called with the override's prior level in its transaction: what it writes there (the audit
   * entry) commits with the override or not at all.
   */
  async setToolPermission(
    account: string,
    server: McpServerRecord,
    tool: string,
    permission: Permission | null,
    recorded: (prior: Permission | null, trx: Kysely<Database>) => Promise<void>,
  ): Promise<{ saved: McpServerRecord; overrides: ToolOverrides }> {
    const builtin = findBuiltin(server.name);
    if (builtin === undefined)
      throw new WireError(ErrorCodes.notFound, `server: no MCP server named ${server.name}`, { field: 'server' });
    return this.deps.outbox.commit(async (trx, emit) => {
      const connection = await this.deps.connections.lock(account, builtin.vendor, trx);
      if (connection === null || builtinServerId(builtin.slug, connection.id) !== server.id)
        throw new WireError(ErrorCodes.notFound, `server: no MCP server named ${server.name}`, { field: 'server' });
      const prior = (await this.deps.permissions.forServer(account, server.id, trx))[tool] ?? null;
      await this.deps.permissions.set(account, server.id, tool, permission, trx);
      await this.deps.discoveries.bumpGeneration(account, builtin.slug, trx);
      await recorded(prior, trx);
      const overrides = await this.deps.permissions.forServer(account, server.id, trx);
      const saved = await this.find(account, server.name, trx);
      if (saved === null)
        throw new WireError(ErrorCodes.notFound, `server: no MCP server named ${server.name}`, { field: 'server' });
      emit(await this.discoveredEvent(saved, true, overrides, trx));
      return { saved, overrides };
    });
  }

  /**
   * Refreshes the token of the vendor behind built-in `slug` (a proxy's `registry.oauth.refresh`,
   * or a discovery's 401 or expiry). When it cannot be refreshed, every built-in of the vendor
   * is recorded `auth_required` (an event, so proxies drop their cached token).
   */
  async refreshVendor(
    account: string,
    slug: string,
    staleTokenHash: string | undefined,
  ): Promise<VendorRefreshOutcome> {
    const builtin = findBuiltin(slug);
    if (builtin === undefined) return 'gone';
    const outcome = await this.deps.credentials.refreshStale(account, builtin.vendor, staleTokenHash);
    if (outcome === 'refused') await this.markAuthRequired(account, builtin.vendor);
    return outcome;
  }

  // --- DiscoveryTarget -------------------------------------------------------------------------

  async headers(server: McpServerRecord): Promise<Record<string, string>> {
    const vendor = this.vendorOf(server);
    const held = await this.deps.credentialReader.builtin(server.accountId, server.name);
    if (held === null) throw new CredentialError(`there is no connection to ${vendor}; connect it again`, true);
    // About to expire, with a refresh token to renew it: renewed first (`expiresAt` is set only then).
    if (expiring(held) && held.oauth?.tokenHash !== undefined) {
      try {
        await this.refreshVendor(server.accountId, server.name, held.oauth.tokenHash);
        return ((await this.deps.credentialReader.builtin(server.accountId, server.name)) ?? held).headers;
      } catch (err) {
        // The old token may still be good; if not, its 401 renews once more.
        this.deps.log.warn('vendor token refresh before expiry failed', {
          account: server.accountId,
          vendor,
          err: err as Error,
        });
      }
    }
    return held.headers;
  }

  async renew(server: McpServerRecord, used: Record<string, string>): Promise<Record<string, string> | null> {
    const token = /^Bearer (.+)$/.exec(used.authorization ?? '')?.[1];
    let outcome: VendorRefreshOutcome;
    try {
      outcome = await this.refreshVendor(
        server.accountId,
        server.name,
        token !== undefined ? accessTokenHash(token) : undefined,
      );
    } catch (err) {
      throw new CredentialError(
        err instanceof WireError ? err.message : `the ${this.vendorOf(server)} token could not be refreshed`,
      );
    }
    if (outcome === 'refused' || outcome === 'gone') return null;
    const stored = await this.deps.credentials.tokens(server.accountId, this.vendorOf(server));
    return stored === null ? null : { authorization: `Bearer ${stored.tokens.accessToken}` };
  }

  /** Records a discovery of this incarnation; null when the vendor was disconnected (or connected anew) meanwhile. */
  async record(
    server: McpServerRecord,
    status: ServerStatus,
    tools: { list: RemoteTool[]; hash: string; generation: number } | undefined,
    nextProbeAt: Date | null,
    trx: Kysely<Database>,
  ): Promise<McpServerRecord | null> {
    const builtin = findBuiltin(server.name);
    if (builtin === undefined) return null;
    const connection = (await this.deps.connections.list(server.accountId, trx)).find(
      (c) => c.vendor === builtin.vendor,
    );
    if (connection === undefined || builtinServerId(builtin.slug, connection.id) !== server.id) return null;
    const recorded = await this.deps.discoveries.record(server.accountId, server.name, status, tools, nextProbeAt, trx);
    return this.toRecord(server.accountId, builtin, connection, recorded);
  }

  overrides(account: string, serverId: string, trx?: Kysely<Database>): Promise<ToolOverrides> {
    return this.deps.permissions.forServer(account, serverId, trx);
  }

  // --- ReprobeSource ---------------------------------------------------------------------------

  /**
   * At start: every lit built-in without a discovery row (lit before background probing, or
   * written by hand) gets a first probe now, so none waits for an owner's refresh.
   */
  async scheduleUnprobed(): Promise<number> {
    const lit = [...BUILTIN_SERVERS.values()].map((b) => ({ vendor: b.vendor, slug: b.slug }));
    return this.deps.discoveries.scheduleUnprobed(lit, new Date());
  }

  dueForProbe(now: Date, limit: number): Promise<Array<{ accountId: string; name: string }>> {
    return this.deps.discoveries.dueForProbe(now, limit);
  }

  // --- internals -------------------------------------------------------------------------------

  private vendorOf(server: McpServerRecord): string {
    const builtin = findBuiltin(server.name);
    if (builtin === undefined) throw new Error(`${server.name} is no built-in server`);
    return builtin.vendor;
  }

  /** The vendor's token cannot be renewed: its built-ins wait for the owner to connect it again. */
  private async markAuthRequired(account: string, vendor: string): Promise<void> {
    const name = findVendor(vendor)?.displayName ?? vendor;
    const now = new Date().toISOString();
    for (const server of (await this.lit(account)).filter((s) => findBuiltin(s.name)?.vendor === vendor)) {
      if (server.status.state === 'auth_required') continue;
      const status: ServerStatus = {
        state: 'auth_required',
        error: `the ${name} connection's token was refused and could not be refreshed; connect ${name} again`,
        checkedAt: now,
        ...(server.status.lastOkAt ? { lastOkAt: server.status.lastOkAt } : {}),
        ...(server.status.transport ? { transport: server.status.transport } : {}),
      };
      await this.deps.outbox.commit(async (trx, emit) => {
        const saved = await this.record(server, status, undefined, null, trx);
        if (saved !== null) emit(await this.discoveredEvent(saved, false, undefined, trx));
      });
      this.deps.log.info('vendor token refused: the owner must connect again', {
        account,
        vendor,
        server: server.name,
      });
    }
  }

  /** The discovered event of a built-in's record, with its overrides (read in `trx` unless given). */
  private async discoveredEvent(
    server: McpServerRecord,
    toolsChanged: boolean,
    overrides: ToolOverrides | undefined,
    trx: Kysely<Database>,
  ): Promise<OutboxEvent> {
    return serverDiscovered(
      this.deps.bus.subjects,
      server,
      toolsChanged,
      overrides ?? (await this.overrides(server.accountId, server.id, trx)),
    );
  }

  private toRecord(
    account: string,
    builtin: BuiltinServer,
    connection: VendorConnection,
    discovery: BuiltinDiscovery | undefined,
  ): McpServerRecord {
    // Never discovered (or only failures so far): the checked-in fallback list serves.
    const discovered = discovery !== undefined && discovery.toolsHash !== '';
    const tools = discovered ? discovery.tools : builtin.fallbackTools.map((t) => ({ ...t }));
    return {
      id: builtinServerId(builtin.slug, connection.id),
      accountId: account,
      name: builtin.slug,
      config: { url: builtinEndpoint(builtin, this.deps.endpoints), auth: 'oauth' },
      tools,
      toolsHash: discovered ? discovery.toolsHash : toolsHash(tools),
      // Moves on with permission changes too, before any discovery succeeded.
      generation: discovery?.generation ?? 0,
      status: discovery?.status ?? { state: 'unknown' },
      createdAt: connection.createdAt,
      updatedAt: discovery?.updatedAt ?? connection.updatedAt,
    };
  }
}
