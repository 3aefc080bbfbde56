import { sql, type Kysely } from 'kysely';
import type { Database, Db } from '@mcpx/db';
import { parseBuiltinServerId, type Permission } from '@mcpx/domain';

/** The owner's per-tool permission overrides of one server, keyed by the tool's remote name. */
export type ToolOverrides = Record<string, Permission>;

/**
 * `registry.tool_permissions`: what the owner decided per tool, over the inherited level. A
 * built-in's overrides (its id `builtin:<slug>:<connection>`) live in
 * `registry.builtin_tool_permissions` and go with its vendor connection; every method takes
 * either kind of id.
 */
export class ToolPermissionsRepository {
  constructor(private readonly db: Db) {}

  /** A server's overrides (empty when the owner set none). */
  async forServer(account: string, serverId: string, trx: Kysely<Database> = this.db): Promise<ToolOverrides> {
    const rows = await trx
      .selectFrom(parseBuiltinServerId(serverId) ? 'registry.builtin_tool_permissions' : 'registry.tool_permissions')
      .select(['tool', 'permission'])
      .where('account_id', '=', account)
      .where('server_id', '=', serverId)
      .orderBy('tool')
      .execute();
    const out: ToolOverrides = {};
    for (const r of rows) out[r.tool] = r.permission;
    return out;
  }

  /** Every override of an account, by server id: one query, whatever the number of servers. */
  async forAccount(account: string, trx: Kysely<Database> = this.db): Promise<Map<string, ToolOverrides>> {
    const rows = await trx
      .selectFrom('registry.tool_permissions')
      .select(['server_id', 'tool', 'permission'])
      .where('account_id', '=', account)
      .unionAll(
        trx
          .selectFrom('registry.builtin_tool_permissions')
          .select(['server_id', 'tool', 'permission'])
          .where('account_id', '=', account),
      )
      .execute();
    const out = new Map<string, ToolOverrides>();
    for (const r of rows) {
      const map = out.get(r.server_id) ?? {};
      map[r.tool] = r.permission;
      out.set(r.server_id, map);
    }
    return out;
  }

  /**
   * The `always_ask` overrides of the account's built-ins among `slugs` (any vendor connection),
   * as `<slug>: <tool>` pairs: what deleting the vendor connection would shed.
   */
  async alwaysAskOfBuiltins(
    account: string,
    slugs: readonly string[],
    trx: Kysely<Database> = this.db,
  ): Promise<Array<{ slug: string; tool: string }>> {
    if (slugs.length === 0) return [];
    const rows = await trx
      .selectFrom('registry.builtin_tool_permissions')
      .select(['server_id', 'tool'])
      .where('account_id', '=', account)
      .where('permission', '=', 'always_ask')
      .execute();
    const out: Array<{ slug: string; tool: string }> = [];
    for (const r of rows) {
      const slug = parseBuiltinServerId(r.server_id)?.slug;
      if (slug !== undefined && slugs.includes(slug)) out.push({ slug, tool: r.tool });
    }
    return out;
  }

  /** Sets (or, with null, removes) one tool's override; true when something changed. */
  async set(
    account: string,
    serverId: string,
    tool: string,
    permission: Permission | null,
    trx: Kysely<Database>,
  ): Promise<boolean> {
    const builtin = parseBuiltinServerId(serverId);
    // A built-in's overrides go with its vendor connection (their own table, keyed by the connection).
    const table = builtin === undefined ? 'registry.tool_permissions' : 'registry.builtin_tool_permissions';
    if (permission === null) {
      const r = await trx
        .deleteFrom(table)
        .where('account_id', '=', account)
        .where('server_id', '=', serverId)
        .where('tool', '=', tool)
        .executeTakeFirst();
      return r.numDeletedRows > 0n;
    }
    const row = { account_id: account, server_id: serverId, tool, permission };
    const r = await (
      builtin === undefined
        ? trx.insertInto('registry.tool_permissions').values(row)
        : trx.insertInto('registry.builtin_tool_permissions').values({ ...row, connection_id: builtin.connectionId })
    )
      .onConflict((oc) =>
        oc
          .columns(['account_id', 'server_id', 'tool'])
          .doUpdateSet({ permission, updated_at: new Date() })
          .where(sql.ref(`${table}.permission`), '<>', permission),
      )
      .executeTakeFirst();
    return (r.numInsertedOrUpdatedRows ?? 0n) > 0n;
  }
}
