import { ErrorCodes, WireError, type ProxyCallRequest } from '@mcpx/contracts';
import { readHeldTool } from '@mcpx/credentials';
import type { Catalog } from './catalog.js';

/** How long a look-up of held tools is reused (a refused call never costs more than one query per this long). */
const HELD_TTL_MS = 2_000;
const HELD_ENTRIES = 10_000;

interface Held {
  at: number;
  servers: Array<{ server: string; cid: string }>;
}

const memo = new WeakMap<Catalog, Map<string, Held>>();

/**
 * The error of a call to a tool that is not in the agent's set: `held_for_review` when a granted
 * pinned server withholds a tool of that name until a person reviews its changed or new contract,
 * else `not_found` as before. Only calls that are refused anyway reach this, so review state adds
 * no query to the call path; the look-up (of the projector's held tools) is reused for a short
 * while per account and tool name, so a flood of such calls costs one query per interval.
 */
export async function missingToolError(catalog: Catalog, req: ProxyCallRequest, grants: ReadonlySet<string>): Promise<WireError> {
  const missing = new WireError(ErrorCodes.notFound, `no tool ${req.tool} is enabled for this agent`, { field: 'tool' });
  // The catalog's own connection to the owners' tables (reads only).
  const db = catalog.database;
  if (typeof req.tool !== 'string' || req.tool === '' || req.tool.length > 256) return missing;
  let entries = memo.get(catalog);
  if (entries === undefined) {
    entries = new Map();
    memo.set(catalog, entries);
  }
  const key = `${req.account}\u0000${req.tool}`;
  let held = entries.get(key);
  if (held === undefined || Date.now() - held.at > HELD_TTL_MS) {
    try {
      held = { at: Date.now(), servers: await readHeldTool(db, req.account, req.tool) };
    } catch {
      return missing;
    }
    entries.delete(key);
    entries.set(key, held);
    if (entries.size > HELD_ENTRIES) entries.delete(entries.keys().next().value as string);
  }
  const granted = held.servers.find((h) => grants.has(h.server));
  if (granted === undefined) return missing;
  return new WireError(
    ErrorCodes.heldForReview,
    `${req.tool} is held for review: the ${granted.server} MCP server changed its contract (or added it), and no person has accepted it yet (ListToolChanges)`,
    {
      server: granted.server,
      tool: req.tool,
      cid: granted.cid,
    },
  );
}
