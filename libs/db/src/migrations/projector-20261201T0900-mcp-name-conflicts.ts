import { sql, type Kysely } from 'kysely';
import { agentToolsQuery } from './agent-tools-view.js';

/**
 * Two granted servers can project the same tool name: `mcp_a_b_c` is slug `a` + tool `b_c` and
 * slug `a_b` + tool `c` in the prefixed style (and `a__b` + `c` against `a` + `b__c` in the
 * default one). The first view let whichever row came last win, silently and not even the same
 * one every time. Now neither takes the name: both are left out of the agent's `tools` and
 * reported as conflicts (`heldBy: 'mcp'`), as a lambda-held name is (`heldBy: 'lambda'`). The
 * projector's own reading of a set (services/projector/src/agent-sets.ts) applies the same rule.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`CREATE OR REPLACE VIEW projector.agent_tools AS ${agentToolsQuery('name-conflicts')}`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`CREATE OR REPLACE VIEW projector.agent_tools AS ${agentToolsQuery('lambda-held')}`.execute(db);
}
