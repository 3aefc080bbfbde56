import { sql, type Kysely } from 'kysely';
import type { Counter, Histogram, Meter, Tracer } from '@opentelemetry/api';
import type { AgentChangedEvent, ServerDeletedEvent, ServerDiscoveredEvent } from '@mcpx/contracts';
import { HeldToolsColumn, ToolMapColumn } from '@mcpx/stored';
import type { Database, Db, ToolsDiff } from '@mcpx/db';
import {
  buildToolDocuments,
  isBuiltinServerId,
  isPlainObject,
  projectToolNames,
  type ToolNameStyle,
} from '@mcpx/domain';
import type { Logger } from '@mcpx/log';
import { McpAttributes, withSpan } from '@mcpx/telemetry';
import {
  agentSet,
  appendPending,
  lockAgent,
  lockKey,
  nextPending,
  openChanges,
  pendingEntry,
  serverLockKey,
  upsertAgentRow,
} from './agent-sets.js';
import { documentRows, writeDocuments } from './server-documents.js';
import type { AgentChange, ChangeLog } from './change-log.js';
import { diffToolMaps, isEmptyDiff, sharedNamesDiff, withoutNames } from './tools-diff.js';

export interface ProjectionDeps {
  db: Db;
  log: Logger;
  tracer: Tracer;
  meter: Meter;
  style: ToolNameStyle;
  changes: ChangeLog;
}

type Outcome = { kind: 'stale' } | { kind: 'unchanged' } | { kind: 'changed'; changes: AgentChange[] };

/**
 * The projection: remote tools → tool documents (stored once per server), and each agent's tool
 * set brought in line with its grant. An agent's set is derived (its granted servers' name → cid
 * maps minus names its lambdas hold), so a contract change writes the server's documents and map
 * once and bumps each granting agent's version in one UPDATE. Every handler is idempotent: a
 * replayed event changes nothing and publishes nothing, and a crash between the commit and the
 * publishes is repaired when the event comes again (see ChangeLog).
 */
export class Projection {
  private readonly events: Counter;
  private readonly agentsUpdated: Counter;
  private readonly duration: Histogram;

  constructor(private readonly deps: ProjectionDeps) {
    this.events = deps.meter.createCounter('mcpx_projector_events_total', {
      description: 'Events handled by kind and outcome',
    });
    this.agentsUpdated = deps.meter.createCounter('mcpx_projector_agents_updated_total', {
      description: 'Agent tool sets changed',
    });
    this.duration = deps.meter.createHistogram('mcpx_projector_event_duration_ms', {
      unit: 'ms',
      description: 'Event handling time',
    });
  }

  async serverDiscovered(e: ServerDiscoveredEvent): Promise<number> {
    const change = `s:${e.account}:${e.server}:${e.serverId}:${e.generation}`;
    return this.timed('discovered', { 'mcp.account': e.account, 'mcp.server': e.server }, () =>
      this.applyServer(e.account, e.server, e.serverId, e.generation, e.tools, change, e.overrides, e.held),
    );
  }

  async serverDeleted(e: ServerDeletedEvent): Promise<number> {
    const change = `d:${e.account}:${e.server}:${e.serverId}`;
    return this.timed('deleted', { 'mcp.account': e.account, 'mcp.server': e.server }, () =>
      this.applyServer(e.account, e.server, e.serverId, null, [], change),
    );
  }

  async agentChanged(e: AgentChangedEvent): Promise<number> {
    return this.timed('agent', { 'mcp.account': e.account, 'mcpx.agent': e.agent }, () => this.applyAgent(e));
  }

  private async timed(kind: string, attrs: Record<string, string>, fn: () => Promise<number>): Promise<number> {
    const started = performance.now();
    // One span per batch (an event's projection run); its agents touched and outcome, never a tool's contents.
    return withSpan(
      this.deps.tracer,
      `projector.${kind}`,
      { ...attrs, ...('mcp.server' in attrs ? { [McpAttributes.server]: attrs['mcp.server'] } : {}) },
      async (span) => {
        const n = await fn();
        span.setAttributes({
          'mcpx.agents_changed': n,
          [McpAttributes.agentsTouched]: n,
          [McpAttributes.outcome]: n > 0 ? 'changed' : 'unchanged',
        });
        this.events.add(1, { kind, outcome: n > 0 ? 'changed' : 'unchanged' });
        this.agentsUpdated.add(n, { kind });
        this.duration.record(performance.now() - started, { kind });
        return n;
      },
    );
  }

  /** Publishes a committed outcome, or recovers the change when the event was already applied. */
  private async finish(account: string, change: string, outcome: Outcome): Promise<number> {
    if (outcome.kind === 'stale') return this.deps.changes.recover(account, change);
    if (outcome.kind === 'unchanged') return 0;
    await this.deps.changes.publish(account, change, outcome.changes);
    return outcome.changes.length;
  }

  /**
   * Brings a server's documents to `tools` (generation null: the server was deleted) and applies
   * the change to every agent that grants it.
   */
  private async applyServer(
    account: string,
    server: string,
    serverId: string,
    generation: number | null,
    tools: ServerDiscoveredEvent['tools'],
    change: string,
    // The owner's per-tool permissions win over the inherited ones (a change of them is a new CID).
    overrides?: ServerDiscoveredEvent['overrides'],
    // A pinned server's tools withheld for review: in no set, kept so conflicts and calls can say why.
    held?: ServerDiscoveredEvent['held'],
  ): Promise<number> {
    if (await this.serverEventApplied(account, server, serverId, generation, change)) return 0;
    const outcome = await this.deps.db.transaction().execute(async (trx): Promise<Outcome> => {
      await lockKey(trx, serverLockKey(account, server));
      const current = await trx
        .selectFrom('projector.projected_servers')
        .selectAll()
        .where('account_id', '=', account)
        .where('server', '=', server)
        .executeTakeFirst();
      const sameIncarnation = current !== undefined && current.server_id === serverId;
      if (generation === null) {
        // A delete of another incarnation (the name was re-created since), or a repeated one, is stale.
        if (!sameIncarnation || current.deleted) return { kind: 'stale' };
      } else if (sameIncarnation && (current.deleted || current.generation >= generation)) {
        return { kind: 'stale' };
      }
      const docs =
        generation === null
          ? []
          : buildToolDocuments(server, tools, {
              style: this.deps.style,
              builtin: isBuiltinServerId(serverId),
              ...(isPlainObject(overrides) ? { overrides } : {}),
            });
      const { rows, next } = documentRows(account, server, serverId, docs);
      const diff = diffToolMaps(current === undefined || current.deleted ? {} : current.tools, next);
      // One write per changed tool, whatever the number of agents.
      const upserts = sameIncarnation ? rows.filter((r) => r.name in diff.added || r.name in diff.changed) : rows;
      await writeDocuments(trx, account, server, upserts, diff.removed);
      const row = {
        server_id: serverId,
        generation: generation ?? current?.generation ?? 0,
        tools: ToolMapColumn.encode(next),
        deleted: generation === null,
        held: HeldToolsColumn.encode(generation === null ? {} : this.heldNames(server, tools, held)),
      };
      await trx
        .insertInto('projector.projected_servers')
        .values({ account_id: account, server, ...row })
        .onConflict((oc) => oc.columns(['account_id', 'server']).doUpdateSet(row))
        .execute();
      if (isEmptyDiff(diff)) return { kind: 'unchanged' };
      const changes = await this.bumpGrantingAgents(trx, account, server, diff, change, {
        before: current === undefined || current.deleted ? {} : current.tools,
        after: next,
      });
      if (changes.length === 0) return { kind: 'unchanged' };
      await this.deps.changes.open(trx, account, change, diff);
      return { kind: 'changed', changes };
    });
    return this.finish(account, change, outcome);
  }

  /**
   * A replay answered in one indexed read, before any transaction or lock: the server's row says
   * the event is stale (the same rule as in the transaction) and its change is not open (nothing
   * is left to publish). Generations only grow and a change's row is committed with the server's,
   * so a stale answer here is final; anything else takes the locked path (which also recovers an
   * open change).
   */
  private async serverEventApplied(
    account: string,
    server: string,
    serverId: string,
    generation: number | null,
    change: string,
  ): Promise<boolean> {
    const r = await sql<{
      server_id: string | null;
      generation: number | null;
      deleted: boolean | null;
      open: boolean;
    }>`
      SELECT p.server_id, p.generation, p.deleted, o.id IS NOT NULL AS open
      FROM (SELECT 1) AS one
      LEFT JOIN projector.projected_servers p ON p.account_id = ${account} AND p.server = ${server}
      LEFT JOIN projector.open_changes o ON o.id = ${change}`.execute(this.deps.db);
    const row = r.rows[0];
    if (row === undefined || row.open) return false;
    const sameIncarnation = row.server_id !== null && row.server_id === serverId;
    if (generation === null) return !sameIncarnation || row.deleted === true;
    return sameIncarnation && (row.deleted === true || (row.generation ?? 0) >= generation);
  }

  /** Projected name → {remoteName, cid} of the tools withheld for review (named as they would be projected with the rest). */
  private heldNames(
    server: string,
    tools: ServerDiscoveredEvent['tools'],
    held: ServerDiscoveredEvent['held'],
  ): Record<string, { remoteName: string; cid: string }> {
    if (held === undefined || held.length === 0) return {};
    const names = projectToolNames(
      server,
      [...new Set([...tools.map((t) => t.name), ...held.map((h) => h.name)])],
      this.deps.style,
    );
    const out: Record<string, { remoteName: string; cid: string }> = {};
    for (const h of held.slice(0, 1000)) {
      const name = names.get(h.name);
      if (name !== undefined) out[name] = { remoteName: h.name, cid: h.cid };
    }
    return out;
  }

  /**
   * One UPDATE for every agent granting the server: its version goes up and its event is kept
   * with it. Names a lambda of the agent holds are left out of that agent's change (an agent whose
   * whole change is held keeps its version), and the conflict is logged.
   */
  private async bumpGrantingAgents(
    trx: Kysely<Database>,
    account: string,
    server: string,
    diff: ToolsDiff,
    change: string,
    maps: { before: Record<string, string>; after: Record<string, string> },
  ): Promise<AgentChange[]> {
    const names = [...Object.keys(diff.added), ...Object.keys(diff.changed), ...diff.removed];
    const heldRows = await sql<{ agent_id: string; name: string }>`
      SELECT l.agent_id, l.name FROM projector.lambda_tools l
      JOIN projector.agent_sets a ON a.account_id = l.account_id AND a.agent_id = l.agent_id
      WHERE l.account_id = ${account} AND l.name = ANY(${names}::text[]) AND a.servers @> ARRAY[${server}]::text[]`.execute(
      trx,
    );
    const held = new Map<string, Set<string>>();
    for (const r of heldRows.rows) held.set(r.agent_id, (held.get(r.agent_id) ?? new Set()).add(r.name));
    const shared = await this.sharedNames(trx, account, server, names, maps);
    for (const agent of shared.keys()) if (!held.has(agent)) held.set(agent, new Set());
    const open = await openChanges(trx, account);
    const updated = await sql<{ agent_id: string; version: number }>`
      UPDATE projector.agent_sets
      SET version = version + 1, pending = ${appendPending(pendingEntry(change), open)}, updated_at = now()
      WHERE account_id = ${account} AND servers @> ARRAY[${server}]::text[] AND agent_id <> ALL(${[...held.keys()]}::text[])
      RETURNING agent_id, version`.execute(trx);
    const changes: AgentChange[] = updated.rows.map((r) => ({ agent: r.agent_id, version: r.version, diff }));
    for (const [agent, heldNames] of held) {
      const own = withoutNames(shared.get(agent) ?? diff, heldNames);
      const newlyHeld = [...heldNames].filter((n) => n in diff.added || n in diff.changed);
      if (newlyHeld.length > 0)
        this.deps.log.warn('tool name held by a lambda: the mcp tool is left out', {
          account,
          agent,
          server,
          names: newlyHeld.sort(),
        });
      if (isEmptyDiff(own)) continue;
      const r = await sql<{ version: number }>`
        UPDATE projector.agent_sets SET version = version + 1, pending = ${appendPending(pendingEntry(change, own), open)}, updated_at = now()
        WHERE account_id = ${account} AND agent_id = ${agent} RETURNING version`.execute(trx);
      if (r.rows[0]) changes.push({ agent, version: r.rows[0].version, diff: own });
    }
    return changes;
  }

  /**
   * Agents that grant both `server` and another server projecting one of `names`: their own diff
   * of the change (a name two servers project goes to neither). Usually no such server exists, and
   * this is one indexed read of the account's projected servers.
   */
  private async sharedNames(
    trx: Kysely<Database>,
    account: string,
    server: string,
    names: string[],
    maps: { before: Record<string, string>; after: Record<string, string> },
  ): Promise<Map<string, ToolsDiff>> {
    const out = new Map<string, ToolsDiff>();
    if (names.length === 0) return out;
    const rivals = await sql<{ server: string; tools: Record<string, string> }>`
      SELECT server, tools FROM projector.projected_servers
      WHERE account_id = ${account} AND server <> ${server} AND deleted = false AND tools ?| ${names}::text[]`.execute(
      trx,
    );
    if (rivals.rows.length === 0) return out;
    const agents = await sql<{ agent_id: string; servers: string[] }>`
      SELECT agent_id, servers FROM projector.agent_sets
      WHERE account_id = ${account} AND servers @> ARRAY[${server}]::text[] AND servers && ${rivals.rows.map((r) => r.server)}::text[]`.execute(
      trx,
    );
    for (const a of agents.rows) {
      const granted = new Set(a.servers);
      const others = new Map<string, string[]>();
      for (const r of rivals.rows) {
        if (!granted.has(r.server)) continue;
        for (const name of names) {
          const cid = r.tools[name];
          if (cid !== undefined) others.set(name, [...(others.get(name) ?? []), cid]);
        }
      }
      const own = sharedNamesDiff(names, maps.before, maps.after, others);
      for (const name of names)
        if (others.has(name) && name in maps.after && !(name in maps.before))
          this.deps.log.warn('tool name projected by two granted servers: neither takes it', {
            account,
            agent: a.agent_id,
            server,
            names: [name],
          });
      out.set(a.agent_id, own);
    }
    return out;
  }

  /** An agent's grant changed: its set becomes its granted servers' tools, lambda-held names left out. */
  private async applyAgent(e: AgentChangedEvent): Promise<number> {
    const change = `a:${e.account}:${e.agent}:${e.revision}`;
    const servers = e.deleted ? [] : [...new Set(e.mcpServers)];
    // A replay of an applied revision whose change is closed: one indexed read, no lock.
    const seen = await sql<{ revision: number | null; open: boolean }>`
      SELECT a.revision, o.id IS NOT NULL AS open
      FROM (SELECT 1) AS one
      LEFT JOIN projector.agent_sets a ON a.account_id = ${e.account} AND a.agent_id = ${e.agent}
      LEFT JOIN projector.open_changes o ON o.id = ${change}`.execute(this.deps.db);
    const row = seen.rows[0];
    if (row !== undefined && !row.open && row.revision !== null && row.revision >= e.revision) return 0;
    const outcome = await this.deps.db.transaction().execute(async (trx): Promise<Outcome> => {
      const current = await lockAgent(trx, e.account, e.agent, servers);
      if (current !== undefined && current.revision >= e.revision) return { kind: 'stale' };
      const before = await agentSet(trx, e.account, e.agent, current?.servers ?? []);
      const after = await agentSet(trx, e.account, e.agent, servers);
      const diff = diffToolMaps(before.tools, after.tools);
      const fresh = after.conflicts.filter(
        (c) => !before.conflicts.some((b) => b.name === c.name && b.server === c.server),
      );
      for (const c of fresh) {
        const why =
          c.heldBy === 'lambda'
            ? 'tool name held by a lambda: the mcp tool is left out'
            : 'tool name projected by two granted servers: neither takes it';
        this.deps.log.warn(why, { account: e.account, agent: e.agent, server: c.server, names: [c.name] });
      }
      if (isEmptyDiff(diff)) {
        await upsertAgentRow(trx, e.account, e.agent, { servers, revision: e.revision });
        return { kind: 'unchanged' };
      }
      const version = (current?.version ?? 0) + 1;
      const pending = await nextPending(trx, e.account, current?.pending ?? null, { change, version, ...diff });
      await upsertAgentRow(trx, e.account, e.agent, { servers, revision: e.revision, version, pending });
      await this.deps.changes.open(trx, e.account, change);
      return { kind: 'changed', changes: [{ agent: e.agent, version, diff }] };
    });
    return this.finish(e.account, change, outcome);
  }
}
