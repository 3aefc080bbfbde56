import { sql, type Kysely } from 'kysely';
import type { Database, PendingToolsEvent, ToolsDiff } from '@mcpx/db';

type Q = Kysely<Database>;

/** One mcp tool of a granted server: its projected name, CID and server. */
export interface McpEntry {
  name: string;
  cid: string;
  server: string;
}

export interface Conflict {
  name: string;
  server: string;
  heldBy: string;
  /** `heldBy: 'held_for_review'`: the held contract's CID. */
  cid?: string;
}

/** An agent's whole tool set as its events describe it: mcp tools not held by a lambda, and its lambdas. */
export interface EffectiveSet {
  /** name → cid of every tool (mcp and lambda). */
  tools: Record<string, string>;
  /** mcp tools a lambda holds the name of: left out of `tools`. */
  conflicts: Conflict[];
}

/** The mcp tools of `servers` (those projected and not deleted). */
export async function mcpEntries(db: Q, account: string, servers: readonly string[]): Promise<McpEntry[]> {
  if (servers.length === 0) return [];
  const rows = await db
    .selectFrom('projector.projected_servers')
    .select(['server', 'tools'])
    .where('account_id', '=', account)
    .where('server', 'in', [...servers])
    .where('deleted', '=', false)
    .execute();
  const out: McpEntry[] = [];
  for (const row of rows)
    for (const [name, cid] of Object.entries(row.tools)) out.push({ name, cid, server: row.server });
  return out;
}

/**
 * The tools of `servers` withheld for review (a pinned server's changed or new contract): in no
 * set, each reported as a conflict `heldBy: 'held_for_review'` with the held contract's CID.
 */
export async function heldConflicts(db: Q, account: string, servers: readonly string[]): Promise<Conflict[]> {
  if (servers.length === 0) return [];
  const rows = await db
    .selectFrom('projector.projected_servers')
    .select(['server', 'held'])
    .where('account_id', '=', account)
    .where('server', 'in', [...servers])
    .where('deleted', '=', false)
    .execute();
  const out: Conflict[] = [];
  for (const row of rows)
    for (const [name, h] of Object.entries(row.held ?? {}))
      out.push({ name, server: row.server, heldBy: 'held_for_review', cid: h.cid });
  return out;
}

/** The agent's lambdas, name → cid. */
export async function lambdaCids(db: Q, account: string, agent: string): Promise<Map<string, string>> {
  const rows = await db
    .selectFrom('projector.lambda_tools')
    .select(['name', 'cid'])
    .where('account_id', '=', account)
    .where('agent_id', '=', agent)
    .execute();
  return new Map(rows.map((r) => [r.name, r.cid]));
}

/**
 * The set rule: a lambda keeps a name it holds, and the colliding mcp tool is left out and
 * reported; a name two granted servers both project goes to neither (both reported, `heldBy:
 * 'mcp'`), so no server can shadow another's tool. The `projector.agent_tools` view is the same rule.
 */
export function effectiveSet(entries: readonly McpEntry[], lambdas: ReadonlyMap<string, string>): EffectiveSet {
  const tools: Record<string, string> = {};
  const conflicts: Conflict[] = [];
  const projecting = new Map<string, number>();
  for (const e of entries) projecting.set(e.name, (projecting.get(e.name) ?? 0) + 1);
  for (const e of entries) {
    if (lambdas.has(e.name)) conflicts.push({ name: e.name, server: e.server, heldBy: 'lambda' });
    else if ((projecting.get(e.name) ?? 0) > 1) conflicts.push({ name: e.name, server: e.server, heldBy: 'mcp' });
    else tools[e.name] = e.cid;
  }
  for (const [name, cid] of lambdas) tools[name] = cid;
  conflicts.sort((a, b) =>
    a.name < b.name ? -1 : a.name > b.name ? 1 : a.server < b.server ? -1 : a.server > b.server ? 1 : 0,
  );
  return { tools, conflicts };
}

/** The agent's current set under `servers`. */
export async function agentSet(
  db: Q,
  account: string,
  agent: string,
  servers: readonly string[],
): Promise<EffectiveSet> {
  const [entries, lambdas] = await Promise.all([mcpEntries(db, account, servers), lambdaCids(db, account, agent)]);
  return effectiveSet(entries, lambdas);
}

/** Transaction-scoped advisory lock on one key (exclusive or shared). */
export async function lockKey(db: Q, key: string, shared = false): Promise<void> {
  if (shared) await sql`SELECT pg_advisory_xact_lock_shared(hashtextextended(${key}, 0))`.execute(db);
  else await sql`SELECT pg_advisory_xact_lock(hashtextextended(${key}, 0))`.execute(db);
}

export const serverLockKey = (account: string, server: string): string => `server:${account}:${server}`;
export const agentLockKey = (account: string, agent: string): string => `agent:${account}:${agent}`;

/**
 * Locks one agent for a change of its set: the agent itself, then (shared) every server it grants
 * before and after, in order, so a server projected meanwhile is seen either by this change or by
 * its own UPDATE, never by neither. Returns the agent's row (locked FOR UPDATE), if it has one.
 */
export async function lockAgent(trx: Q, account: string, agent: string, servers: readonly string[]) {
  await lockKey(trx, agentLockKey(account, agent));
  const before = await trx
    .selectFrom('projector.agent_sets')
    .select('servers')
    .where('account_id', '=', account)
    .where('agent_id', '=', agent)
    .executeTakeFirst();
  for (const server of [...new Set([...(before?.servers ?? []), ...servers])].sort())
    await lockKey(trx, serverLockKey(account, server), true);
  return trx
    .selectFrom('projector.agent_sets')
    .selectAll()
    .where('account_id', '=', account)
    .where('agent_id', '=', agent)
    .forUpdate()
    .executeTakeFirst();
}

/**
 * SQL of the new `pending` of a row: its events of still-open changes, each kept whatever its
 * place, then `entry`. Changes close out of order (one whose publish failed stays open while a
 * later one is published and closed), so an earlier open change's event must survive a closed one
 * after it: its recovery publishes from these rows.
 */
export function appendPending(entry: string, open: readonly string[]) {
  return sql<string>`COALESCE(
      (SELECT jsonb_agg(e.value ORDER BY e.n) FROM jsonb_array_elements(pending) WITH ORDINALITY AS e(value, n) WHERE e.value ->> 'change' = ANY(${[...open]}::text[])),
      '[]'::jsonb)
    || jsonb_build_array(${entry}::jsonb || jsonb_build_object('version', version + 1))`;
}

/** The open changes of an account (their events are not all confirmed published). */
export async function openChanges(db: Q, account: string): Promise<string[]> {
  const rows = await db.selectFrom('projector.open_changes').select('id').where('account_id', '=', account).execute();
  return rows.map((r) => r.id);
}

/** A pending entry: the change, and the agent's own diff when it differs from the change's. */
export function pendingEntry(change: string, own?: ToolsDiff): string {
  return JSON.stringify(
    own === undefined ? { change } : { change, added: own.added, changed: own.changed, removed: own.removed },
  );
}

/** The agent's pending events after a change: those of still-open changes (wherever they stand: changes close out of order), then this one. */
export async function nextPending(
  trx: Q,
  account: string,
  pending: PendingToolsEvent[] | null,
  entry: PendingToolsEvent,
): Promise<string> {
  const open = pending === null || pending.length === 0 ? [] : await openChanges(trx, account);
  const keep = (pending ?? []).filter((p) => open.includes(p.change));
  return JSON.stringify([...keep, entry]);
}

/** Creates or updates an agent's row; `version`/`pending` only when its set changed. */
export async function upsertAgentRow(
  trx: Q,
  account: string,
  agent: string,
  row: { servers: string[]; revision: number; version?: number; pending?: string },
): Promise<void> {
  const changed = row.version !== undefined ? { version: row.version, pending: row.pending ?? null } : {};
  await trx
    .insertInto('projector.agent_sets')
    .values({ account_id: account, agent_id: agent, servers: row.servers, revision: row.revision, ...changed })
    .onConflict((oc) =>
      oc
        .columns(['account_id', 'agent_id'])
        .doUpdateSet({ servers: row.servers, revision: row.revision, ...changed, updated_at: new Date() }),
    )
    .execute();
}
