import { decodePayload } from '@mcpx/contracts';
import type { ProxyReads } from '@mcpx/credentials';
import { builtinServerId, findBuiltin, inheritPermission, isPermission, normalizeAnnotations, type Permission, type RemoteTool } from '@mcpx/domain';

/**
 * The permission level of every tool of one server as the registry's own records give it: the
 * tools of its last discovery (their annotations) and the owner's overrides. This, not the level
 * written into a projected document, decides whether a human stops a call: a document is built
 * from events, and an event on the bus can be forged; the owner's rows cannot.
 */
export interface ServerLevels {
  /** Remote tool name → level. A tool the registry does not list is absent (not callable). */
  byTool: ReadonlyMap<string, Permission>;
}

type Overrides = Record<string, string>;

function levels(tools: readonly RemoteTool[], overrides: Overrides, builtin: boolean): ServerLevels {
  const byTool = new Map<string, Permission>();
  for (const t of tools) {
    // A repeated name keeps its first entry, as the projection does.
    if (typeof t?.name !== 'string' || byTool.has(t.name)) continue;
    const override = Object.hasOwn(overrides, t.name) ? overrides[t.name] : undefined;
    byTool.set(t.name, isPermission(override) ? override : inheritPermission(normalizeAnnotations(t.annotations), { builtin, toolName: t.name }));
  }
  return { byTool };
}

/**
 * Reads a server's levels: an mcp_servers row of the account by name, else a built-in lit by a
 * vendor connection (its last discovery, else its checked-in fallback list; its overrides are
 * keyed by the connection). Null when the account has neither.
 */
export async function loadServerLevels(db: ProxyReads, account: string, name: string): Promise<ServerLevels | null> {
  const row = await db.selectFrom('registry.mcp_servers').select(['id', 'tools_cbor']).where('account_id', '=', account).where('name', '=', name).executeTakeFirst();
  if (row !== undefined) {
    const overrides = await db.selectFrom('registry.tool_permissions').select(['tool', 'permission']).where('account_id', '=', account).where('server_id', '=', row.id).execute();
    return levels(decodePayload<RemoteTool[]>(row.tools_cbor), Object.fromEntries(overrides.map((o) => [o.tool, o.permission])), false);
  }
  const builtin = findBuiltin(name);
  if (builtin === undefined) return null;
  const connection = await db.selectFrom('registry.vendor_connections').select('id').where('account_id', '=', account).where('vendor', '=', builtin.vendor).executeTakeFirst();
  if (connection === undefined) return null;
  const [discovery, overrides] = await Promise.all([
    db.selectFrom('registry.builtin_discoveries').select(['tools_cbor', 'tools_hash']).where('account_id', '=', account).where('slug', '=', builtin.slug).executeTakeFirst(),
    db.selectFrom('registry.builtin_tool_permissions').select(['tool', 'permission']).where('account_id', '=', account).where('server_id', '=', builtinServerId(builtin.slug, connection.id)).execute(),
  ]);
  // Never discovered (or only failures so far): the fallback list serves, as in the registry.
  const tools = discovery !== undefined && discovery.tools_hash !== '' ? decodePayload<RemoteTool[]>(discovery.tools_cbor) : builtin.fallbackTools;
  return levels(tools, Object.fromEntries(overrides.map((o) => [o.tool, o.permission])), true);
}
