import { ErrorCodes, WireError, type ProxyCallRequest } from '@mcpx/contracts';
import { readHeldTool, readToolDocument, readWithheldTool, type ProxyReads } from '@mcpx/stored';
import type { Catalog } from './catalog.js';

/** How long a look-up of held tools is reused (a refused call never costs more than one query per this long). */
const HELD_TTL_MS = 2_000;
const HELD_ENTRIES = 10_000;

interface Held {
  at: number;
  servers: Array<{ server: string; cid: string }>;
}

const memo = new WeakMap<Catalog, Map<string, Held>>();

/** The held servers for `key`, read by `read` at most once per {@link HELD_TTL_MS}; null when the read failed. */
async function heldFor(
  catalog: Catalog,
  key: string,
  read: (db: ProxyReads) => Promise<Held['servers']>,
): Promise<Held['servers'] | null> {
  let entries = memo.get(catalog);
  if (entries === undefined) {
    entries = new Map();
    memo.set(catalog, entries);
  }
  let held = entries.get(key);
  if (held === undefined || Date.now() - held.at > HELD_TTL_MS) {
    try {
      // The catalog's own connection to the owners' tables (reads only).
      held = { at: Date.now(), servers: await read(catalog.database) };
    } catch {
      return null;
    }
    entries.delete(key);
    entries.set(key, held);
    if (entries.size > HELD_ENTRIES) entries.delete(entries.keys().next().value as string);
  }
  return held.servers;
}

function heldError(tool: string, server: string, cid: string): WireError {
  return new WireError(
    ErrorCodes.heldForReview,
    `${tool} is held for review: the ${server} MCP server changed its contract (or added it), and no person has accepted it yet (ListToolChanges)`,
    {
      server,
      tool,
      cid,
    },
  );
}

/**
 * The error of a call to a tool that is not in the agent's set: `held_for_review` when a granted
 * pinned server withholds a tool of that name until a person reviews its changed or new contract,
 * else `not_found` as before. Only calls that are refused anyway reach this, so review state adds
 * no query to the call path; the look-up (of the projector's held tools) is reused for a short
 * while per account and tool name, so a flood of such calls costs one query per interval.
 */
export async function missingToolError(
  catalog: Catalog,
  req: ProxyCallRequest,
  grants: ReadonlySet<string>,
): Promise<WireError> {
  const missing = new WireError(ErrorCodes.notFound, `no tool ${req.tool} is enabled for this agent`, {
    field: 'tool',
  });
  if (typeof req.tool !== 'string' || req.tool === '' || req.tool.length > 256) return missing;
  const servers = await heldFor(catalog, `tool\u0000${req.account}\u0000${req.tool}`, (db) =>
    readHeldTool(db, req.account, req.tool),
  );
  const granted = servers?.find((h) => grants.has(h.server));
  return granted === undefined ? missing : heldError(req.tool, granted.server, granted.cid);
}

/**
 * The error of a call whose projected document (CID `cid`) the catalog does not give (no such
 * document, or its server's row no longer lists the tool): `held_for_review` when the registry has
 * just withheld the tool for review (its server's held tools say so, before the projector has taken
 * it out of the agent's set), else `not_found`. Refused calls only; the look-up is reused as
 * {@link missingToolError}'s.
 */
export async function unlistedToolError(catalog: Catalog, req: ProxyCallRequest, cid: string): Promise<WireError> {
  const missing = new WireError(ErrorCodes.notFound, `no tool ${req.tool} is enabled for this agent`, {
    field: 'tool',
  });
  const servers = await heldFor(catalog, `doc\u0000${req.account}\u0000${cid}`, async (db) => {
    const doc = await readToolDocument(db, req.account, cid);
    return doc === null ? [] : await readWithheldTool(db, req.account, doc.server, doc.remoteName);
  });
  const held = servers?.[0];
  return held === undefined ? missing : heldError(req.tool, held.server, held.cid);
}
