import { FieldRules, heldToolStatus, type Rule } from '@mcpx/contracts';
import { builtinServerId, findBuiltin, type RemoteTool } from '@mcpx/domain';
import type { ProxyReads } from '../read-model.js';
import { cborShape } from './stored-shape.js';

const { str, anyStr, optional, list, checkedMap } = FieldRules;

/**
 * A remote tool as the registry keeps it (`sanitizeTools` in its discovery): a name and optional
 * texts checked; its schemas and annotations kept exactly as the server gave them (a document's
 * CID is computed over them, and the inherited level reads a hint only when it is `true`).
 */
const storedTool: Rule<RemoteTool> = checkedMap({ name: str, title: optional(anyStr), description: optional(anyStr) });
const storedTools = list(storedTool);

/** `registry.mcp_servers.tools_cbor`: the server's listed tools (a pinned server's: the accepted contracts). */
export const ServerToolsColumn = cborShape('registry.mcp_servers.tools_cbor', storedTools);
/** `registry.mcp_servers.discovered_cbor`: a pinned server's list as the server last gave it. */
export const DiscoveredToolsColumn = cborShape('registry.mcp_servers.discovered_cbor', storedTools);
/** `registry.builtin_discoveries.tools_cbor`: a built-in's tools of its last discovery for the account. */
export const BuiltinToolsColumn = cborShape('registry.builtin_discoveries.tools_cbor', storedTools);
/** `registry.tool_contracts.tool_cbor`: a pinned server's accepted contract of one tool, as the server listed it. */
export const ToolContractColumn = cborShape('registry.tool_contracts.tool_cbor', storedTool);
/** `registry.tool_changes.tool_cbor`: a pinned server's held change of one tool, as the server listed it. */
export const ToolChangeColumn = cborShape('registry.tool_changes.tool_cbor', storedTool);

/**
 * `registry.mcp_servers.held_cbor`: a pinned server's held changes, written with its tools (null
 * when none is held); the registry shows them in the server's status, the proxy reads which tools
 * are withheld ({@link readWithheldTool}).
 */
export const HeldChangesColumn = cborShape('registry.mcp_servers.held_cbor', list(heldToolStatus));

/** What decides the levels of one server's tools: its tools and the owner's overrides (tool → level, unchecked). */
export interface ServerToolRows {
  tools: readonly RemoteTool[];
  overrides: Record<string, string>;
  /** A built-in (its levels inherit as a built-in's do). */
  builtin: boolean;
}

/**
 * A server's tools and overrides as the registry's rows give them: an mcp_servers row of the
 * account by name, else a built-in lit by a vendor connection (its last discovery, else its
 * checked-in fallback list; its overrides are keyed by the connection). Null when the account has
 * neither.
 */
export async function readServerTools(db: ProxyReads, account: string, name: string): Promise<ServerToolRows | null> {
  const row = await db
    .selectFrom('registry.mcp_servers')
    .select(['id', 'tools_cbor'])
    .where('account_id', '=', account)
    .where('name', '=', name)
    .executeTakeFirst();
  if (row !== undefined) {
    const overrides = await db
      .selectFrom('registry.tool_permissions')
      .select(['tool', 'permission'])
      .where('account_id', '=', account)
      .where('server_id', '=', row.id)
      .execute();
    return { tools: ServerToolsColumn.decode(row.tools_cbor), overrides: byTool(overrides), builtin: false };
  }
  const builtin = findBuiltin(name);
  if (builtin === undefined) return null;
  const connection = await db
    .selectFrom('registry.vendor_connections')
    .select('id')
    .where('account_id', '=', account)
    .where('vendor', '=', builtin.vendor)
    .executeTakeFirst();
  if (connection === undefined) return null;
  const [discovery, overrides] = await Promise.all([
    db
      .selectFrom('registry.builtin_discoveries')
      .select(['tools_cbor', 'tools_hash'])
      .where('account_id', '=', account)
      .where('slug', '=', builtin.slug)
      .executeTakeFirst(),
    db
      .selectFrom('registry.builtin_tool_permissions')
      .select(['tool', 'permission'])
      .where('account_id', '=', account)
      .where('server_id', '=', builtinServerId(builtin.slug, connection.id))
      .execute(),
  ]);
  // Never discovered (or only failures so far): the fallback list serves, as in the registry.
  const tools =
    discovery !== undefined && discovery.tools_hash !== ''
      ? BuiltinToolsColumn.decode(discovery.tools_cbor)
      : builtin.fallbackTools;
  return { tools, overrides: byTool(overrides), builtin: true };
}

function byTool(rows: ReadonlyArray<{ tool: string; permission: string }>): Record<string, string> {
  return Object.fromEntries(rows.map((o) => [o.tool, o.permission]));
}

/**
 * The held change withholding the server's tool `remoteName` from agents (a change a person has
 * not accepted yet): its server and the held contract's CID; empty when the account has no such
 * server or it withholds no such tool.
 */
export async function readWithheldTool(
  db: ProxyReads,
  account: string,
  server: string,
  remoteName: string,
): Promise<Array<{ server: string; cid: string }>> {
  const row = await db
    .selectFrom('registry.mcp_servers')
    .select('held_cbor')
    .where('account_id', '=', account)
    .where('name', '=', server)
    .executeTakeFirst();
  if (row === undefined || row.held_cbor === null) return [];
  const held = HeldChangesColumn.decode(row.held_cbor).find((h) => h.name === remoteName && h.withheld);
  return held === undefined ? [] : [{ server, cid: held.cid }];
}
