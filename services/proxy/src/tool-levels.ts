import { readServerTools, type ProxyReads } from '@mcpx/stored';
import { inheritPermission, isPermission, normalizeAnnotations, type Permission, type RemoteTool } from '@mcpx/domain';

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
    byTool.set(
      t.name,
      isPermission(override)
        ? override
        : inheritPermission(normalizeAnnotations(t.annotations), { builtin, toolName: t.name }),
    );
  }
  return { byTool };
}

/**
 * Reads a server's levels from the registry's rows (`readServerTools` of `@mcpx/stored`,
 * decoded by the columns' own shapes). Null when the account has no such server.
 */
export async function loadServerLevels(db: ProxyReads, account: string, name: string): Promise<ServerLevels | null> {
  const rows = await readServerTools(db, account, name);
  return rows === null ? null : levels(rows.tools, rows.overrides, rows.builtin);
}
