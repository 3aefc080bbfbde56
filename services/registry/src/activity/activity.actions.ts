import { sql } from 'kysely';
import {
  CALL_PAGE,
  invalidInput,
  type ActionRequest,
  type CallFigures,
  type CallOutcomeFilter,
  type CallView,
} from '@mcpx/contracts';
import type { ActionType } from '@mcpx/contracts';
import type { Db } from '@mcpx/db';
import type { AgentsRepository } from '../agents/agents.repository.js';
import type { ActionHandler } from '../shared/action-handler.js';

/** What the call log's actions use: the calls' table and the agents they name. */
export interface ActivityDeps {
  db: Db;
  agents: AgentsRepository;
}

type ActivityAction<T extends ActionType> = ActionHandler<T, ActivityDeps>;

/**
 * The call log (docs/activity.md), read from `activity.calls` (written by the proxies). Every
 * query names the caller's account first, and each filter has an index that starts with the
 * account and ends with `at DESC, id DESC`: a page is read along the index, whatever the size of
 * the log. Bad filters are `invalid_input` naming the field; a filter that matches nothing (an id
 * of another account, a page past the end) is an empty page.
 */

interface CallQuery {
  limit: number;
  agentRef?: string;
  server?: string;
  tool?: string;
  outcome?: CallOutcomeFilter;
  since?: Date;
  until?: Date;
  cursor?: { at: Date; id: string };
}

function time(value: string | undefined, field: string): Date | undefined {
  if (value === undefined) return undefined;
  const at = new Date(value);
  if (Number.isNaN(at.getTime())) throw invalidInput(field, 'must be an ISO-8601 time');
  return at;
}

/** ListCalls' filters, decoded by the action map (grammar and bounds); the times and cursor read here. */
export function parseCallQuery(action: ActionRequest<'ListCalls'>): CallQuery {
  const q: CallQuery = { limit: action.limit ?? CALL_PAGE.defaultLimit };
  if (action.agent !== undefined) q.agentRef = action.agent;
  if (action.server !== undefined) q.server = action.server;
  if (action.tool !== undefined) q.tool = action.tool;
  if (action.outcome !== undefined) q.outcome = action.outcome;
  const since = time(action.since, 'since');
  const until = time(action.until, 'until');
  if (since !== undefined) q.since = since;
  if (until !== undefined) q.until = until;
  if (action.cursor !== undefined) {
    // The cursor's grammar is the action map's: `<ms>.<id>`.
    const [ms, id] = action.cursor.split('.');
    const at = new Date(Number(ms));
    if (Number.isNaN(at.getTime())) throw invalidInput('cursor', 'must be a cursor from a previous page');
    q.cursor = { at, id: id! };
  }
  return q;
}

/** An agent named by id or name: the account's agent of that name, else the value as an id (the calls of a deleted agent stay findable). */
async function agentId(deps: ActivityDeps, account: string, ref: string): Promise<string> {
  const agent = await deps.agents.find(account, ref);
  return agent?.id ?? ref;
}

/**
 * `ListCalls {agent?, server?, tool?, outcome?, since?, until?, limit?, cursor?}` → `{calls,
 * nextCursor?}`: the account's calls, newest first, one page at a time; `nextCursor` gives the
 * next (older) page. OWNER and WRITER.
 */
export const listCalls: ActivityAction<'ListCalls'> = async (deps, caller, action) => {
  const q = parseCallQuery(action);
  const account = caller.account;
  let query = deps.db.selectFrom('activity.calls').selectAll().where('account_id', '=', account);
  if (q.agentRef !== undefined) query = query.where('agent', '=', await agentId(deps, account, q.agentRef));
  if (q.server !== undefined) query = query.where('server', '=', q.server);
  if (q.tool !== undefined) query = query.where('tool', '=', q.tool);
  if (q.outcome === 'failed') query = query.where('outcome', '<>', 'ok');
  else if (q.outcome !== undefined) query = query.where('outcome', '=', q.outcome);
  if (q.since !== undefined) query = query.where('at', '>=', q.since);
  if (q.until !== undefined) query = query.where('at', '<', q.until);
  if (q.cursor !== undefined) query = query.where(sql<boolean>`(at, id) < (${q.cursor.at}, ${q.cursor.id}::bigint)`);
  const rows = await query
    .orderBy('at', 'desc')
    .orderBy('id', 'desc')
    .limit(q.limit + 1)
    .execute();
  const page = rows.slice(0, q.limit);
  const names = await agentNames(
    deps,
    account,
    page.map((r) => r.agent),
  );
  const calls = page.map((r): CallView => {
    const name = names.get(r.agent);
    return {
      id: String(r.id),
      at: r.at.toISOString(),
      agent: name !== undefined ? { id: r.agent, name } : { id: r.agent },
      run: r.run,
      callId: r.call_id,
      ...(r.server !== null ? { server: r.server } : {}),
      tool: r.tool,
      code: r.code,
      outcome: r.outcome,
      durationMs: r.duration_ms,
      ...(r.era !== null ? { era: r.era } : {}),
      ...(r.approval_id !== null ? { approvalId: r.approval_id } : {}),
      ...(r.input_request_id !== null ? { inputRequestId: r.input_request_id } : {}),
      ...(r.task_id !== null ? { taskId: r.task_id } : {}),
    };
  });
  const last = page.at(-1);
  return rows.length > q.limit && last !== undefined
    ? { calls, nextCursor: `${last.at.getTime()}.${last.id}` }
    : { calls };
};

async function agentNames(deps: ActivityDeps, account: string, ids: string[]): Promise<Map<string, string>> {
  const unique = [...new Set(ids)];
  if (unique.length === 0) return new Map();
  const rows = await deps.db
    .selectFrom('registry.agents')
    .select(['id', 'name'])
    .where('account_id', '=', account)
    .where('id', 'in', unique)
    .execute();
  return new Map(rows.map((r) => [r.id, r.name]));
}

/** The most servers one answer of GetCallFigures holds (an account's servers are bounded by its quota well below it). */
const MAX_FIGURE_SERVERS = 1_000;

interface FigureRow {
  server: string;
  calls_h: number;
  failed_h: number;
  p50_h: number | null;
  p95_h: number | null;
  calls_d: number;
  failed_d: number;
  p50_d: number | null;
  p95_d: number | null;
}

function figures(calls: number, failed: number, p50: number | null, p95: number | null): CallFigures {
  return { calls, failed, errorRate: calls === 0 ? 0 : failed / calls, p50Ms: p50, p95Ms: p95 };
}

/**
 * `GetCallFigures {server?}` → `{at, servers}`: per server with calls in the last 24 hours, its
 * calls, failed calls (any outcome but `ok`), error rate and p50/p95 duration over the last hour
 * and the last 24 hours. Calls refused before their tool was found name no server and are left
 * out. OWNER and WRITER.
 */
export const getCallFigures: ActivityAction<'GetCallFigures'> = async (deps, caller, action) => {
  const server = action.server;
  const now = new Date();
  const hour = new Date(now.getTime() - 3_600_000);
  const day = new Date(now.getTime() - 86_400_000);
  const rows = await sql<FigureRow>`
    SELECT server,
      count(*) FILTER (WHERE at >= ${hour})::int AS calls_h,
      count(*) FILTER (WHERE at >= ${hour} AND outcome <> 'ok')::int AS failed_h,
      percentile_disc(0.5) WITHIN GROUP (ORDER BY duration_ms) FILTER (WHERE at >= ${hour}) AS p50_h,
      percentile_disc(0.95) WITHIN GROUP (ORDER BY duration_ms) FILTER (WHERE at >= ${hour}) AS p95_h,
      count(*)::int AS calls_d,
      count(*) FILTER (WHERE outcome <> 'ok')::int AS failed_d,
      percentile_disc(0.5) WITHIN GROUP (ORDER BY duration_ms) AS p50_d,
      percentile_disc(0.95) WITHIN GROUP (ORDER BY duration_ms) AS p95_d
    FROM activity.calls
    WHERE account_id = ${caller.account} AND at >= ${day} AND at <= ${now} AND server IS NOT NULL ${server !== undefined ? sql`AND server = ${server}` : sql``}
    GROUP BY server ORDER BY server LIMIT ${MAX_FIGURE_SERVERS}`.execute(deps.db);
  return {
    at: now.toISOString(),
    servers: rows.rows.map((r) => ({
      server: r.server,
      lastHour: figures(r.calls_h, r.failed_h, r.p50_h, r.p95_h),
      lastDay: figures(r.calls_d, r.failed_d, r.p50_d, r.p95_d),
    })),
  };
};
