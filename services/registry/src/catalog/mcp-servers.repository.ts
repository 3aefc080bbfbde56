import { randomUUID } from 'node:crypto';
import { sql, type Kysely, type Selectable } from 'kysely';
import { decodePayload, encodePayload, type ServerStatus } from '@mcpx/contracts';
import type { Database, Db, McpServersTable } from '@mcpx/db';
import type { RemoteTool } from '@mcpx/domain';
import {
  DiscoveredToolsColumn,
  HeldChangesColumn,
  ServerToolsColumn,
  decodeServerConfig,
  readEraVerdict,
  type StoredServerConfig,
} from '@mcpx/stored';

/**
 * `discovery_owed_at` once a discovery that started from the record saved at `owedUpTo` has
 * recorded: cleared, unless a later save owes another.
 */
export function settledOwed(owedUpTo: Date) {
  return sql<Date | null>`CASE WHEN discovery_owed_at <= ${owedUpTo} THEN NULL ELSE discovery_owed_at END`;
}

/** `config_cbor` (static headers in the clear, secret headers as references): the one shape, in `@mcpx/stored`. */
export type { StoredServerConfig };

export interface McpServerRecord {
  id: string;
  accountId: string;
  name: string;
  config: StoredServerConfig;
  tools: RemoteTool[];
  toolsHash: string;
  generation: number;
  /** With `status.heldTools` from its own column (a status write never carries them). */
  status: ServerStatus;
  createdAt: Date;
  updatedAt: Date;
  /** A pinned server: the hash of its list as the server last gave it ('' before its first pinned discovery or when not pinned). */
  discoveredHash?: string;
}

/** The status as stored: without the held changes, which live in their own column. */
export function storedStatus(status: ServerStatus): ServerStatus {
  if (status.heldTools === undefined) return status;
  const { heldTools: _held, ...rest } = status;
  return rest;
}

function statusOf(row: Selectable<McpServersTable>): ServerStatus {
  const status = storedStatus(decodePayload<ServerStatus>(row.status_cbor));
  const held = row.held_cbor === null ? [] : HeldChangesColumn.decode(row.held_cbor);
  return held.length > 0 ? { ...status, heldTools: held } : status;
}

/** A pinned server's list as the server last gave it (empty when none is kept). */
export function discoveredTools(row: Pick<Selectable<McpServersTable>, 'discovered_cbor'>): RemoteTool[] {
  return row.discovered_cbor === null ? [] : DiscoveredToolsColumn.decode(row.discovered_cbor);
}

export function toRecord(row: Selectable<McpServersTable>): McpServerRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    name: row.name,
    config: decodeServerConfig(row.config_cbor),
    tools: ServerToolsColumn.decode(row.tools_cbor),
    toolsHash: row.tools_hash,
    generation: row.generation,
    status: statusOf(row),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    discoveredHash: row.discovered_hash,
  };
}

export class McpServersRepository {
  constructor(private readonly db: Db) {}

  async find(account: string, name: string, trx: Kysely<Database> = this.db): Promise<McpServerRecord | null> {
    const row = await trx
      .selectFrom('registry.mcp_servers')
      .selectAll()
      .where('account_id', '=', account)
      .where('name', '=', name)
      .executeTakeFirst();
    return row ? toRecord(row) : null;
  }

  /** The server named `name`, row-locked until the caller's transaction ends (serialises moves of its generation). */
  async lock(account: string, name: string, trx: Kysely<Database>): Promise<McpServerRecord | null> {
    const row = await trx
      .selectFrom('registry.mcp_servers')
      .selectAll()
      .where('account_id', '=', account)
      .where('name', '=', name)
      .forUpdate()
      .executeTakeFirst();
    return row ? toRecord(row) : null;
  }

  async findById(account: string, id: string): Promise<McpServerRecord | null> {
    const row = await this.db
      .selectFrom('registry.mcp_servers')
      .selectAll()
      .where('account_id', '=', account)
      .where('id', '=', id)
      .executeTakeFirst();
    return row ? toRecord(row) : null;
  }

  async list(account: string, trx: Kysely<Database> = this.db): Promise<McpServerRecord[]> {
    const rows = await trx
      .selectFrom('registry.mcp_servers')
      .selectAll()
      .where('account_id', '=', account)
      .orderBy('name')
      .execute();
    return rows.map(toRecord);
  }

  /** Names of an account's servers among `names`. */
  async existingNames(account: string, names: string[], trx: Kysely<Database> = this.db): Promise<Set<string>> {
    if (names.length === 0) return new Set();
    const rows = await trx
      .selectFrom('registry.mcp_servers')
      .select('name')
      .where('account_id', '=', account)
      .where('name', 'in', names)
      .execute();
    return new Set(rows.map((r) => r.name));
  }

  /**
   * Creates or updates a server's config by name; tools and status are left as they are. The
   * saved config is owed a discovery (`discovery_owed_at`, the record's `updatedAt`) until one
   * that started from it records ({@link recordDiscovery}'s `owedUpTo`).
   */
  async upsertConfig(
    account: string,
    name: string,
    config: StoredServerConfig,
    trx: Kysely<Database>,
  ): Promise<McpServerRecord> {
    const initialStatus: ServerStatus = { state: 'unknown' };
    const at = new Date();
    const row = await trx
      .insertInto('registry.mcp_servers')
      .values({
        id: randomUUID(),
        account_id: account,
        name,
        url: config.url,
        config_cbor: encodePayload(config),
        tools_cbor: ServerToolsColumn.encode([]),
        tools_hash: '',
        generation: 0,
        status_cbor: encodePayload(initialStatus),
        updated_at: at,
        discovery_owed_at: at,
      })
      .onConflict((oc) =>
        oc
          .columns(['account_id', 'name'])
          .doUpdateSet({ url: config.url, config_cbor: encodePayload(config), updated_at: at, discovery_owed_at: at }),
      )
      .returningAll()
      .executeTakeFirstOrThrow();
    return toRecord(row);
  }

  /**
   * Records a discovery. With `tools` (a success) the list, its hash and the generation change;
   * without (a failure) only the status does, so the last good list stays. `owedUpTo`: the
   * `updatedAt` of the record the discovery started from; the discovery owed to a save up to then
   * is settled (a save after it stays owed).
   */
  async recordDiscovery(
    account: string,
    id: string,
    status: ServerStatus,
    tools: { list: RemoteTool[]; hash: string; generation: number } | undefined,
    nextProbeAt: Date | null,
    trx: Kysely<Database> = this.db,
    owedUpTo?: Date,
  ): Promise<McpServerRecord | null> {
    const row = await trx
      .updateTable('registry.mcp_servers')
      .set({
        status_cbor: encodePayload(storedStatus(status)),
        next_probe_at: nextProbeAt,
        updated_at: new Date(),
        ...(owedUpTo !== undefined ? { discovery_owed_at: settledOwed(owedUpTo) } : {}),
        // The generation moves on from the row's own, not the caller's snapshot: another writer
        // (SetToolPermission) may have moved it meanwhile, and an equal generation would be stale.
        ...(tools
          ? {
              tools_cbor: ServerToolsColumn.encode(tools.list),
              tools_hash: tools.hash,
              generation: sql<number>`CASE WHEN tools_hash = ${tools.hash} THEN GREATEST(generation, ${tools.generation}) ELSE GREATEST(generation + 1, ${tools.generation}) END`,
            }
          : {}),
      })
      .where('account_id', '=', account)
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst();
    return row ? toRecord(row) : null;
  }

  /** Moves a server's generation on (SetToolPermission: its documents change); the record as updated. */
  async bumpGeneration(account: string, id: string, trx: Kysely<Database>): Promise<McpServerRecord> {
    const row = await trx
      .updateTable('registry.mcp_servers')
      .set({ generation: sql<number>`generation + 1`, updated_at: new Date() })
      .where('account_id', '=', account)
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirstOrThrow();
    return toRecord(row);
  }

  async delete(account: string, name: string, trx: Kysely<Database>): Promise<McpServerRecord | null> {
    const row = await trx
      .deleteFrom('registry.mcp_servers')
      .where('account_id', '=', account)
      .where('name', '=', name)
      .returningAll()
      .executeTakeFirst();
    return row ? toRecord(row) : null;
  }

  /**
   * The server's era verdict for `authContext` (see ../discovery/era-verdicts.ts), or undefined: none
   * recorded, or one recorded under another auth context (never reused across contexts).
   */
  eraVerdict(account: string, server: string, authContext: string): Promise<unknown> {
    // The one reading, shared with the proxy (`@mcpx/stored`), beside this writer.
    return readEraVerdict(this.db, account, server, authContext);
  }

  /**
   * The server's stored era verdict, whatever its auth context: only for what the server is
   * (whether it streams changes), never to connect with (see {@link eraVerdict}).
   */
  async anyEraVerdict(account: string, server: string): Promise<unknown> {
    const row = await this.db
      .selectFrom('registry.era_verdicts')
      .select('verdict_cbor')
      .where('account_id', '=', account)
      .where('server', '=', server)
      .executeTakeFirst();
    return row === undefined ? undefined : decodePayload<unknown>(row.verdict_cbor);
  }

  /** Records the server's era verdict for `authContext`, replacing the one of any other context. */
  async saveEraVerdict(account: string, server: string, authContext: string, verdict: unknown): Promise<void> {
    const verdictCbor = encodePayload(verdict);
    await this.db
      .insertInto('registry.era_verdicts')
      .values({ account_id: account, server, auth_context: authContext, verdict_cbor: verdictCbor })
      .onConflict((oc) =>
        oc
          .columns(['account_id', 'server'])
          .doUpdateSet({ auth_context: authContext, verdict_cbor: verdictCbor, updated_at: new Date() }),
      )
      .execute();
  }

  /**
   * Schedules the re-list of a server's list in use for `at`, unless one (or a re-probe) is
   * already scheduled: true when this call armed it.
   */
  async armRelist(account: string, id: string, at: Date): Promise<boolean> {
    const res = await this.db
      .updateTable('registry.mcp_servers')
      .set({ next_probe_at: at })
      .where('account_id', '=', account)
      .where('id', '=', id)
      .where('next_probe_at', 'is', null)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  /**
   * Servers whose config was saved before `savedBefore` and never discovered since (their
   * discovery was lost: see {@link upsertConfig}), longest owed first.
   */
  async owedDiscoveries(savedBefore: Date, limit: number): Promise<Array<{ accountId: string; name: string }>> {
    const rows = await this.db
      .selectFrom('registry.mcp_servers')
      .select(['account_id', 'name'])
      .where('discovery_owed_at', '<=', savedBefore)
      .orderBy('discovery_owed_at')
      .limit(limit)
      .execute();
    return rows.map((r) => ({ accountId: r.account_id, name: r.name }));
  }

  /** Servers due for a background re-probe, oldest due first. */
  async dueForProbe(now: Date, limit: number): Promise<Array<{ accountId: string; name: string }>> {
    const rows = await this.db
      .selectFrom('registry.mcp_servers')
      .select(['account_id', 'name'])
      .where('next_probe_at', '<=', now)
      .orderBy('next_probe_at')
      .limit(limit)
      .execute();
    return rows.map((r) => ({ accountId: r.account_id, name: r.name }));
  }
}
