import { sql, type Kysely, type Selectable } from 'kysely';
import { decodePayload, encodePayload, type ServerStatus } from '@mcpx/contracts';
import type { BuiltinDiscoveriesTable, Database, Db } from '@mcpx/db';
import { BuiltinToolsColumn } from '@mcpx/stored';
import type { RemoteTool } from '@mcpx/domain';

export interface BuiltinDiscovery {
  slug: string;
  tools: RemoteTool[];
  /** Empty while no discovery has succeeded (the fallback list serves). */
  toolsHash: string;
  generation: number;
  status: ServerStatus;
  updatedAt: Date;
}

const UNKNOWN: ServerStatus = { state: 'unknown' };

function toDiscovery(r: Selectable<BuiltinDiscoveriesTable>): BuiltinDiscovery {
  return {
    slug: r.slug,
    tools: BuiltinToolsColumn.decode(r.tools_cbor),
    toolsHash: r.tools_hash,
    generation: r.generation,
    status: decodePayload<ServerStatus>(r.status_cbor),
    updatedAt: r.updated_at,
  };
}

/** Per account, the last discovery of each built-in (absent: never discovered, the fallback serves). */
export class BuiltinDiscoveriesRepository {
  constructor(private readonly db: Db) {}

  async list(account: string, trx: Kysely<Database> = this.db): Promise<Map<string, BuiltinDiscovery>> {
    const rows = await trx
      .selectFrom('registry.builtin_discoveries')
      .selectAll()
      .where('account_id', '=', account)
      .execute();
    return new Map(rows.map((r) => [r.slug, toDiscovery(r)]));
  }

  /**
   * Records a discovery: with `tools` (a success) the list changes, without only the status does.
   * The generation moves on from the row's own, as mcp_servers' does: SetToolPermission may have
   * moved it meanwhile, and an equal generation would be stale at the projector. Returns the row as
   * recorded.
   */
  async record(
    account: string,
    slug: string,
    status: ServerStatus,
    tools: { list: RemoteTool[]; hash: string; generation: number } | undefined,
    nextProbeAt: Date | null,
    trx: Kysely<Database> = this.db,
  ): Promise<BuiltinDiscovery> {
    const values = {
      status_cbor: encodePayload(status),
      next_probe_at: nextProbeAt,
      updated_at: new Date(),
      ...(tools ? { tools_cbor: BuiltinToolsColumn.encode(tools.list), tools_hash: tools.hash } : {}),
    };
    const row = await trx
      .insertInto('registry.builtin_discoveries')
      .values({
        account_id: account,
        slug,
        tools_cbor: BuiltinToolsColumn.encode(tools?.list ?? []),
        tools_hash: tools?.hash ?? '',
        generation: tools?.generation ?? 0,
        ...values,
      })
      .onConflict((oc) =>
        oc.columns(['account_id', 'slug']).doUpdateSet({
          ...values,
          ...(tools
            ? {
                generation: sql<number>`CASE WHEN registry.builtin_discoveries.tools_hash = ${tools.hash} THEN GREATEST(registry.builtin_discoveries.generation, ${tools.generation}) ELSE GREATEST(registry.builtin_discoveries.generation + 1, ${tools.generation}) END`,
              }
            : {}),
        }),
      )
      .returningAll()
      .executeTakeFirstOrThrow();
    return toDiscovery(row);
  }

  /**
   * Marks a built-in `unknown` with its next probe at `nextProbeAt` (just lit, or its vendor
   * connected again): its last good list, if any, stays.
   */
  async schedule(account: string, slug: string, nextProbeAt: Date, trx: Kysely<Database> = this.db): Promise<void> {
    const values = { status_cbor: encodePayload(UNKNOWN), next_probe_at: nextProbeAt, updated_at: new Date() };
    await trx
      .insertInto('registry.builtin_discoveries')
      .values({ ...unprobedRow(account, slug, 0), ...values })
      .onConflict((oc) => oc.columns(['account_id', 'slug']).doUpdateSet(values))
      .execute();
  }

  /**
   * Schedules a first probe, at `nextProbeAt`, of every built-in a vendor connection lights that
   * has no discovery row (`lit`: vendor → its built-ins' slugs): built-ins lit before background
   * probing existed, or by a row written by hand. Idempotent across instances: existing rows win.
   */
  async scheduleUnprobed(lit: Array<{ vendor: string; slug: string }>, nextProbeAt: Date): Promise<number> {
    if (lit.length === 0) return 0;
    const catalog = sql.join(lit.map((l) => sql`(${l.vendor}, ${l.slug})`));
    const r = await sql`
      INSERT INTO registry.builtin_discoveries (account_id, slug, tools_cbor, tools_hash, generation, status_cbor, next_probe_at, updated_at)
      SELECT vc.account_id, c.slug, ${BuiltinToolsColumn.encode([])}, '', 0, ${encodePayload(UNKNOWN)}, ${nextProbeAt}, now()
      FROM registry.vendor_connections vc JOIN (VALUES ${catalog}) AS c(vendor, slug) ON c.vendor = vc.vendor
      ON CONFLICT (account_id, slug) DO NOTHING`.execute(this.db);
    return Number(r.numAffectedRows ?? 0n);
  }

  /** Moves a built-in's generation on (SetToolPermission: its documents change); creates the row if it has none. */
  async bumpGeneration(account: string, slug: string, trx: Kysely<Database>): Promise<void> {
    await trx
      .insertInto('registry.builtin_discoveries')
      .values({ ...unprobedRow(account, slug, 1), next_probe_at: new Date() })
      .onConflict((oc) =>
        oc.columns(['account_id', 'slug']).doUpdateSet({
          generation: sql<number>`registry.builtin_discoveries.generation + 1`,
          updated_at: new Date(),
        }),
      )
      .execute();
  }

  /** Built-ins due for a background probe, oldest due first. */
  async dueForProbe(now: Date, limit: number): Promise<Array<{ accountId: string; name: string }>> {
    const rows = await this.db
      .selectFrom('registry.builtin_discoveries')
      .select(['account_id', 'slug'])
      .where('next_probe_at', '<=', now)
      .orderBy('next_probe_at')
      .limit(limit)
      .execute();
    return rows.map((r) => ({ accountId: r.account_id, name: r.slug }));
  }

  async deleteSlugs(account: string, slugs: string[], trx: Kysely<Database> = this.db): Promise<void> {
    if (slugs.length === 0) return;
    await trx
      .deleteFrom('registry.builtin_discoveries')
      .where('account_id', '=', account)
      .where('slug', 'in', slugs)
      .execute();
  }
}

/** A built-in's discovery row before its first listing: no tools, status unknown, at `generation`. */
function unprobedRow(account: string, slug: string, generation: number) {
  return {
    account_id: account,
    slug,
    tools_cbor: BuiltinToolsColumn.encode([]),
    tools_hash: '',
    generation,
    status_cbor: encodePayload(UNKNOWN),
  };
}
