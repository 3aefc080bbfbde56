import { ErrorCodes, WireError, type ProxyCallRequest } from '@mcpx/contracts';
import { readHeldTool, readToolDocument, readWithheldTool, type ProxyReads } from '@mcpx/stored';
import type { Catalog } from './catalog.js';

/** How long a found hold is reused (a flood of calls to a held tool costs one query per this long). */
const HELD_TTL_MS = 2_000;
const HELD_ENTRIES = 10_000;

type HeldServers = Array<{ server: string; cid: string }>;

interface Held {
  at: number;
  servers: HeldServers;
}

const memo = new WeakMap<Catalog, Map<string, Held>>();
/** Reads under way, by key: concurrent refusals of one tool share one query. */
const reading = new WeakMap<Catalog, Map<string, Promise<HeldServers | null>>>();

function entriesOf<T>(maps: WeakMap<Catalog, Map<string, T>>, catalog: Catalog): Map<string, T> {
  let entries = maps.get(catalog);
  if (entries === undefined) {
    entries = new Map();
    maps.set(catalog, entries);
  }
  return entries;
}

/**
 * The held servers for `key`, read by `read`; null when the read failed. A hold found is reused
 * for {@link HELD_TTL_MS}; none found is not kept: the hold that follows a refusal (a tool the
 * registry withholds a moment later) must be seen by the next call, not a memo's life later.
 */
async function heldFor(
  catalog: Catalog,
  key: string,
  read: (db: ProxyReads) => Promise<HeldServers>,
): Promise<HeldServers | null> {
  const entries = entriesOf(memo, catalog);
  const held = entries.get(key);
  if (held !== undefined && Date.now() - held.at <= HELD_TTL_MS) return held.servers;
  const pending = entriesOf(reading, catalog);
  const under = pending.get(key);
  if (under !== undefined) return under;
  // The catalog's own connection to the owners' tables (reads only).
  const loading = read(catalog.database).then(
    (servers) => {
      entries.delete(key);
      if (servers.length > 0) {
        entries.set(key, { at: Date.now(), servers });
        if (entries.size > HELD_ENTRIES) entries.delete(entries.keys().next().value as string);
      }
      return servers;
    },
    () => null,
  );
  pending.set(key, loading);
  try {
    return await loading;
  } finally {
    pending.delete(key);
  }
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

function notFound(req: ProxyCallRequest): WireError {
  return new WireError(ErrorCodes.notFound, `no tool ${req.tool} is enabled for this agent`, { field: 'tool' });
}

/** A tool name worth a look-up: what the projection could hold (anything else is not found outright). */
function nameable(tool: unknown): tool is string {
  return typeof tool === 'string' && tool !== '' && tool.length <= 256;
}

/**
 * The error of a call to a tool that is not in the agent's set: `held_for_review` when a granted
 * pinned server withholds a tool of that name until a person reviews its changed or new contract,
 * else `not_found` as before. Only calls that are refused anyway reach this, so review state adds
 * no query to the call path; a hold found (in the projector's held tools) is reused for a short
 * while per account and tool name, so a flood of calls to a held tool costs one query per interval.
 */
export async function missingToolError(
  catalog: Catalog,
  req: ProxyCallRequest,
  grants: ReadonlySet<string>,
): Promise<WireError> {
  if (!nameable(req.tool)) return notFound(req);
  const servers = await heldFor(catalog, `tool\u0000${req.account}\u0000${req.tool}`, (db) =>
    readHeldTool(db, req.account, req.tool),
  );
  const granted = servers?.find((h) => grants.has(h.server));
  return granted === undefined ? notFound(req) : heldError(req.tool, granted.server, granted.cid);
}

/**
 * The error of a call whose projected document (CID `cid`) the catalog does not give (no such
 * document, or its server's row no longer lists the tool), to an agent whose set the catalog read
 * before the projector took the tool out: `held_for_review` when the tool is withheld for review,
 * else `not_found`. Withheld says the registry (its server's held tools) while the document is
 * there; once the projector has taken the tool out, it has deleted the document too, in the
 * transaction that wrote the tool into the server's projected held tools, so those say it (until
 * the agent-tools-changed event reaches this catalog, which may take a while). Refused calls only;
 * a hold found is reused as {@link missingToolError}'s.
 */
export async function unlistedToolError(
  catalog: Catalog,
  req: ProxyCallRequest,
  cid: string,
  grants: ReadonlySet<string>,
): Promise<WireError> {
  const servers = await heldFor(catalog, `doc\u0000${req.account}\u0000${cid}`, async (db) => {
    const doc = await readToolDocument(db, req.account, cid);
    if (doc !== null) return await readWithheldTool(db, req.account, doc.server, doc.remoteName);
    return nameable(req.tool) ? await readHeldTool(db, req.account, req.tool) : [];
  });
  const held = servers?.find((h) => grants.has(h.server));
  return held === undefined ? notFound(req) : heldError(req.tool, held.server, held.cid);
}
