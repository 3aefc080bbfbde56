import { sql, type Kysely } from 'kysely';
import type { Counter, Histogram, Meter, Tracer } from '@opentelemetry/api';
import type { Bus } from '@mcpx/bus';
import type { AgentChangedEvent, AgentToolsChangedEvent, ServerDeletedEvent, ServerDiscoveredEvent } from '@mcpx/contracts';
import { encodePayload, decodePayload } from '@mcpx/contracts';
import type { Database, Db, ToolsDiff } from '@mcpx/db';
import { buildToolDocuments, documentCid, type ToolNameStyle } from '@mcpx/domain';
import type { Logger } from '@mcpx/log';
import { withSpan } from '@mcpx/telemetry';
import { diffToolMaps, isEmptyDiff, withoutNames } from './tools-diff.js';

/** How many agent-tools-changed publishes are in flight at once. */
const PUBLISH_WINDOW = 2000;

export interface ProjectionDeps {
  db: Db;
  bus: Bus;
  log: Logger;
  tracer: Tracer;
  meter: Meter;
  style: ToolNameStyle;
}

interface AgentChange {
  agent: string;
  version: number;
  diff: ToolsDiff;
}

/**
 * The projection: remote tools → tool documents (stored once per server), and each agent's tool
 * set (name → cid) brought in line with its grant. Every handler is idempotent: a replayed event
 * changes nothing and publishes nothing, and a crash between the commit and the publishes is
 * repaired on redelivery through the `pending` diff kept with the change.
 */
export class Projection {
  private readonly events: Counter;
  private readonly agentsUpdated: Counter;
  private readonly duration: Histogram;

  constructor(private readonly deps: ProjectionDeps) {
    this.events = deps.meter.createCounter('mcpx_projector_events_total', { description: 'Events handled by kind and outcome' });
    this.agentsUpdated = deps.meter.createCounter('mcpx_projector_agents_updated_total', { description: 'Agent tool sets changed' });
    this.duration = deps.meter.createHistogram('mcpx_projector_event_duration_ms', { unit: 'ms', description: 'Event handling time' });
  }

  async serverDiscovered(e: ServerDiscoveredEvent): Promise<number> {
    return this.timed('discovered', { 'mcp.account': e.account, 'mcp.server': e.server }, () => this.applyServer(e.account, e.server, e.serverId, e.generation, e.tools));
  }

  async serverDeleted(e: ServerDeletedEvent): Promise<number> {
    return this.timed('deleted', { 'mcp.account': e.account, 'mcp.server': e.server }, () => this.applyServer(e.account, e.server, e.serverId, null, []));
  }

  async agentChanged(e: AgentChangedEvent): Promise<number> {
    return this.timed('agent', { 'mcp.account': e.account, 'mcpx.agent': e.agent }, () => this.applyAgent(e));
  }

  private async timed(kind: string, attrs: Record<string, string>, fn: () => Promise<number>): Promise<number> {
    const started = performance.now();
    return withSpan(this.deps.tracer, `projector.${kind}`, attrs, async (span) => {
      const n = await fn();
      span.setAttribute('mcpx.agents_changed', n);
      this.events.add(1, { kind, outcome: n > 0 ? 'changed' : 'unchanged' });
      this.agentsUpdated.add(n, { kind });
      this.duration.record(performance.now() - started, { kind });
      return n;
    });
  }

  /**
   * Brings a server's documents to `tools` (generation null: the server was deleted) and applies
   * the change to every agent that grants it with one set-based UPDATE.
   */
  private async applyServer(account: string, server: string, serverId: string, generation: number | null, tools: ServerDiscoveredEvent['tools']): Promise<number> {
    const outcome = await this.deps.db.transaction().execute(async (trx) => {
      await sql`SELECT pg_advisory_xact_lock(hashtextextended(${`server:${account}:${server}`}, 0))`.execute(trx);
      const current = await trx
        .selectFrom('projector.projected_servers')
        .selectAll()
        .where('account_id', '=', account)
        .where('server', '=', server)
        .executeTakeFirst();
      if (generation === null) {
        // A delete of an older incarnation (the name was re-created since) is stale.
        if (current === undefined || current.server_id !== serverId) return { kind: 'stale' as const, pending: null };
      } else if (current !== undefined && current.server_id === serverId && current.generation >= generation) {
        return { kind: 'stale' as const, pending: current.pending };
      }
      const docs = generation === null ? [] : buildToolDocuments(server, tools, { style: this.deps.style });
      const next: Record<string, string> = {};
      const rows = docs.map((doc) => {
        const cid = documentCid(doc);
        next[doc.name] = cid;
        return { account_id: account, server, server_id: serverId, name: doc.name, kind: doc.kind, cid, doc_cbor: encodePayload(doc) };
      });
      const before = current?.tools ?? {};
      const diff = diffToolMaps(before, next);
      // One write per changed tool, whatever the number of agents.
      if (diff.removed.length > 0) {
        await trx.deleteFrom('projector.tool_documents').where('account_id', '=', account).where('server', '=', server).where('name', 'in', diff.removed).execute();
      }
      const upserts = rows.filter((r) => r.name in diff.added || r.name in diff.changed || current?.server_id !== serverId);
      if (upserts.length > 0) {
        await trx
          .insertInto('projector.tool_documents')
          .values(upserts)
          .onConflict((oc) => oc.columns(['account_id', 'server', 'name']).doUpdateSet((eb) => ({ cid: eb.ref('excluded.cid'), doc_cbor: eb.ref('excluded.doc_cbor'), server_id: eb.ref('excluded.server_id'), kind: eb.ref('excluded.kind') })))
          .execute();
      }
      const pending = isEmptyDiff(diff) ? null : diff;
      if (generation === null) {
        await trx.deleteFrom('projector.projected_servers').where('account_id', '=', account).where('server', '=', server).execute();
      } else {
        await trx
          .insertInto('projector.projected_servers')
          .values({ account_id: account, server, server_id: serverId, generation, tools: JSON.stringify(next), pending: pending ? JSON.stringify(pending) : null })
          .onConflict((oc) => oc.columns(['account_id', 'server']).doUpdateSet({ server_id: serverId, generation, tools: JSON.stringify(next), pending: pending ? JSON.stringify(pending) : null }))
          .execute();
      }
      if (pending === null) return { kind: 'unchanged' as const, pending: null };
      const changes = await this.applyToGrantingAgents(trx, account, server, pending);
      return { kind: 'changed' as const, pending, changes };
    });
    if (outcome.kind === 'stale') {
      // A redelivery after a crash between commit and publish: publish again (ids de-duplicate).
      if (outcome.pending !== null && generation !== null) return this.republishServer(account, server, outcome.pending);
      return 0;
    }
    if (outcome.kind === 'unchanged') return 0;
    await this.publish(account, outcome.changes);
    if (generation !== null) {
      await this.deps.db.updateTable('projector.projected_servers').set({ pending: null }).where('account_id', '=', account).where('server', '=', server).where('generation', '=', generation).execute();
    }
    return outcome.changes.length;
  }

  /** One UPDATE for every agent granting the server; lambda-held names are left out per agent. */
  private async applyToGrantingAgents(trx: Kysely<Database>, account: string, server: string, diff: ToolsDiff): Promise<AgentChange[]> {
    const upserts = { ...diff.added, ...diff.changed };
    const drop = [...diff.removed, ...Object.keys(diff.changed)];
    const heldByLambda = await trx
      .selectFrom('projector.lambda_tools as l')
      .innerJoin('projector.agent_tools as a', (j) => j.onRef('a.account_id', '=', 'l.account_id').onRef('a.agent_id', '=', 'l.agent_id'))
      .select(['l.agent_id', 'l.name'])
      .where('l.account_id', '=', account)
      .where('l.name', 'in', Object.keys(upserts).length > 0 ? Object.keys(upserts) : [''])
      .where(sql<boolean>`a.servers @> ARRAY[${server}]::text[]`)
      .execute();
    const held = new Map<string, Set<string>>();
    for (const r of heldByLambda) held.set(r.agent_id, (held.get(r.agent_id) ?? new Set()).add(r.name));
    const updated = await sql<{ agent_id: string; version: number }>`
      UPDATE projector.agent_tools a
      SET tools = (a.tools - ${drop}::text[]) || (${JSON.stringify(upserts)}::jsonb - COALESCE(
            (SELECT array_agg(l.name) FROM projector.lambda_tools l WHERE l.account_id = a.account_id AND l.agent_id = a.agent_id),
            '{}'::text[])),
          version = a.version + 1,
          updated_at = now()
      WHERE a.account_id = ${account} AND a.servers @> ARRAY[${server}]::text[]
      RETURNING a.agent_id, a.version`.execute(trx);
    if (held.size > 0) await this.recordConflicts(trx, account, server, held);
    return updated.rows.map((r) => ({ agent: r.agent_id, version: r.version, diff: withoutNames(diff, held.get(r.agent_id) ?? new Set()) }));
  }

  private async recordConflicts(trx: Kysely<Database>, account: string, server: string, held: Map<string, Set<string>>): Promise<void> {
    for (const [agent, names] of held) {
      const row = await trx.selectFrom('projector.agent_tools').select('conflicts').where('account_id', '=', account).where('agent_id', '=', agent).executeTakeFirst();
      const others = (row?.conflicts ?? []).filter((c) => c.server !== server);
      const conflicts = [...others, ...[...names].sort().map((name) => ({ name, server, heldBy: 'lambda' }))];
      await trx.updateTable('projector.agent_tools').set({ conflicts: JSON.stringify(conflicts) }).where('account_id', '=', account).where('agent_id', '=', agent).execute();
      this.deps.log.warn('tool name held by a lambda', { account, agent, server, names: [...names] });
    }
  }

  private async republishServer(account: string, server: string, pending: ToolsDiff): Promise<number> {
    const agents = await this.deps.db
      .selectFrom('projector.agent_tools')
      .select(['agent_id', 'version'])
      .where('account_id', '=', account)
      .where(sql<boolean>`servers @> ARRAY[${server}]::text[]`)
      .execute();
    await this.publish(account, agents.map((a) => ({ agent: a.agent_id, version: a.version, diff: pending })));
    await this.deps.db.updateTable('projector.projected_servers').set({ pending: null }).where('account_id', '=', account).where('server', '=', server).execute();
    return agents.length;
  }

  /** An agent's grant changed: its set becomes the union of its granted servers' documents. */
  private async applyAgent(e: AgentChangedEvent): Promise<number> {
    const outcome = await this.deps.db.transaction().execute(async (trx) => {
      await sql`SELECT pg_advisory_xact_lock(hashtextextended(${`agent:${e.account}:${e.agent}`}, 0))`.execute(trx);
      // Serialise with projections of the granted servers (they take these locks exclusively), so
      // a server projected while this runs is seen either here or by its own UPDATE, never by neither.
      for (const server of [...new Set(e.mcpServers)].sort()) {
        await sql`SELECT pg_advisory_xact_lock_shared(hashtextextended(${`server:${e.account}:${server}`}, 0))`.execute(trx);
      }
      const current = await trx.selectFrom('projector.agent_tools').selectAll().where('account_id', '=', e.account).where('agent_id', '=', e.agent).executeTakeFirst();
      if (current !== undefined && current.revision >= e.revision) return { stale: true as const, current };
      const servers = e.deleted ? [] : [...new Set(e.mcpServers)];
      const projected = servers.length === 0 ? [] : await trx.selectFrom('projector.projected_servers').select(['server', 'tools']).where('account_id', '=', e.account).where('server', 'in', servers).execute();
      const lambdas = await trx.selectFrom('projector.lambda_tools').select('name').where('account_id', '=', e.account).where('agent_id', '=', e.agent).execute();
      const lambdaNames = new Set(lambdas.map((l) => l.name));
      const next: Record<string, string> = {};
      const conflicts: Array<{ name: string; server: string; heldBy: string }> = [];
      for (const p of projected) {
        for (const [name, cid] of Object.entries(p.tools)) {
          if (lambdaNames.has(name)) conflicts.push({ name, server: p.server, heldBy: 'lambda' });
          else next[name] = cid;
        }
      }
      const diff = diffToolMaps(current?.tools ?? {}, next);
      const changed = !isEmptyDiff(diff);
      const version = (current?.version ?? 0) + (changed ? 1 : 0);
      const pending = changed ? JSON.stringify({ ...diff, version }) : null;
      await trx
        .insertInto('projector.agent_tools')
        .values({ account_id: e.account, agent_id: e.agent, servers, revision: e.revision, tools: JSON.stringify(next), conflicts: JSON.stringify(conflicts), version: Math.max(version, 1), pending })
        .onConflict((oc) => oc.columns(['account_id', 'agent_id']).doUpdateSet({ servers, revision: e.revision, tools: JSON.stringify(next), conflicts: JSON.stringify(conflicts), version: Math.max(version, 1), pending, updated_at: new Date() }))
        .execute();
      for (const c of conflicts) this.deps.log.warn('tool name held by a lambda', { account: e.account, agent: e.agent, server: c.server, name: c.name });
      return { stale: false as const, change: changed ? { agent: e.agent, version: Math.max(version, 1), diff } : null };
    });
    let change: AgentChange | null;
    if (outcome.stale) {
      const p = outcome.current.pending;
      change = p === null ? null : { agent: e.agent, version: p.version, diff: { added: p.added, changed: p.changed, removed: p.removed } };
    } else {
      change = outcome.change;
    }
    if (change === null) return 0;
    await this.publish(e.account, [change]);
    await this.deps.db.updateTable('projector.agent_tools').set({ pending: null }).where('account_id', '=', e.account).where('agent_id', '=', e.agent).where('version', '=', change.version).execute();
    return 1;
  }

  /** Publishes agent-tools-changed for each change, many in flight; ids make a retry a no-op. */
  private async publish(account: string, changes: AgentChange[]): Promise<void> {
    const { bus } = this.deps;
    for (let i = 0; i < changes.length; i += PUBLISH_WINDOW) {
      await Promise.all(
        changes.slice(i, i + PUBLISH_WINDOW).map((c) => {
          const event: AgentToolsChangedEvent = { account, agent: c.agent, version: c.version, ...c.diff };
          return bus.publishEvent(bus.subjects.agentToolsChanged(account, c.agent), event, `tools-${c.agent}-${c.version}`);
        }),
      );
    }
  }
}

/** Decodes a stored document (the proxy and the read endpoint use it). */
export function decodeDocument<T>(bytes: Uint8Array): T {
  return decodePayload<T>(bytes);
}
