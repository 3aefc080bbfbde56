import { sql } from 'kysely';
import type { Db } from '@mcpx/db';
import type { ApiClient } from '../support/api-client.js';
import type { RegistryHarness } from '../support/registry-harness.js';

/** A registry for a large call log: no projector, no action rate limits (the seeding acts freely). */
export const CALL_LOG_REGISTRY: Parameters<typeof RegistryHarness.start>[0] = {
  projector: false,
  env: { LOG_LEVEL: 'warn', RATE_ACTIONS_PER_SIGNER: '0', RATE_ACTIONS_PER_ADDRESS: '0' },
};

/** The four agents (`agent-0`…`agent-3`) whose calls {@link seedCalls} writes; their ids. */
export async function createCallLogAgents(api: ApiClient): Promise<string[]> {
  const agents: string[] = [];
  for (let i = 0; i < 4; i++) {
    const { agent } = await api.act<{ agent: { id: string } }>('CreateAgent', {
      name: `agent-${i}`,
      definition: { mcpServers: [] },
    });
    agents.push(agent.id);
  }
  return agents;
}

/**
 * Writes `n` recorded calls of one account straight into `activity.calls` (for the registry's
 * benchmark and the million-row test): spread evenly over the last 30 days, the agents in turn,
 * 20 servers (`s00`…`s19`) of 5 tools each, 5 % failed (refused, error or lost), durations from 1
 * to 500 ms. One INSERT, then ANALYZE so the planner knows the table's size.
 */
export async function seedCalls(db: Db, account: string, agents: string[], n: number): Promise<void> {
  const spacing = (30 * 86_400) / n;
  await sql`
    INSERT INTO activity.calls (account_id, at, agent, run, call_id, server, tool, code, outcome, duration_ms, era)
    SELECT ${account}, now() - make_interval(secs => g * ${spacing}::float8), (${agents}::text[])[1 + g % ${agents.length}], 'run-' || (g / 50), 'c' || g,
      's' || lpad((g % 20)::text, 2, '0'), 's' || lpad((g % 20)::text, 2, '0') || '__tool_' || (g % 100 / 20),
      CASE WHEN g % 20 = 7 THEN 'server_error' WHEN g % 40 = 3 THEN 'invalid_arguments' WHEN g % 200 = 9 THEN 'timeout' ELSE 'ok' END,
      CASE WHEN g % 20 = 7 THEN 'error' WHEN g % 40 = 3 THEN 'refused' WHEN g % 200 = 9 THEN 'lost' ELSE 'ok' END,
      1 + ((g::bigint * 7919) % 500)::int, 'modern'
    FROM generate_series(1, ${n}) g`.execute(db);
  await sql`ANALYZE activity.calls`.execute(db);
}
