import type { Kysely } from 'kysely';
import { decodePayload, encodePayload, type ServerStatus } from '@mcpx/contracts';
import type { Database, Db } from '@mcpx/db';
import type { RemoteTool } from '@mcpx/domain';

export interface BuiltinDiscovery {
  slug: string;
  tools: RemoteTool[];
  toolsHash: string;
  generation: number;
  status: ServerStatus;
  updatedAt: Date;
}

/** Per account, the last discovery of each built-in (absent: never discovered, the fallback serves). */
export class BuiltinDiscoveriesRepository {
  constructor(private readonly db: Db) {}

  async list(account: string): Promise<Map<string, BuiltinDiscovery>> {
    const rows = await this.db.selectFrom('registry.builtin_discoveries').selectAll().where('account_id', '=', account).execute();
    return new Map(
      rows.map((r) => [
        r.slug,
        { slug: r.slug, tools: decodePayload<RemoteTool[]>(r.tools_cbor), toolsHash: r.tools_hash, generation: r.generation, status: decodePayload<ServerStatus>(r.status_cbor), updatedAt: r.updated_at },
      ]),
    );
  }

  /** Records a discovery: with `tools` (a success) the list changes, without only the status does. */
  async record(account: string, slug: string, status: ServerStatus, tools: { list: RemoteTool[]; hash: string; generation: number } | undefined): Promise<void> {
    const values = { status_cbor: encodePayload(status), updated_at: new Date(), ...(tools ? { tools_cbor: encodePayload(tools.list), tools_hash: tools.hash, generation: tools.generation } : {}) };
    await this.db
      .insertInto('registry.builtin_discoveries')
      .values({ account_id: account, slug, tools_cbor: encodePayload(tools?.list ?? []), tools_hash: tools?.hash ?? '', generation: tools?.generation ?? 0, ...values })
      .onConflict((oc) => oc.columns(['account_id', 'slug']).doUpdateSet(values))
      .execute();
  }

  async deleteSlugs(account: string, slugs: string[], trx: Kysely<Database> = this.db): Promise<void> {
    if (slugs.length === 0) return;
    await trx.deleteFrom('registry.builtin_discoveries').where('account_id', '=', account).where('slug', 'in', slugs).execute();
  }
}
