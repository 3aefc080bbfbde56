import { sql, type Kysely } from 'kysely';
import { agentToolsQuery } from './agent-tools-view.js';

/**
 * Tools of a pinned server held for review (their changed or new contract waits for a person):
 * `projected_servers.held` maps each such tool's projected name to `{remoteName, cid}` (the held
 * contract's CID). They are in no agent's set; the view reports them among an agent's conflicts
 * (`heldBy: 'held_for_review'`), and the proxy reads them to refuse a call with `held_for_review`.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('projector.projected_servers')
    .addColumn('held', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .execute();
  await sql`CREATE OR REPLACE VIEW projector.agent_tools AS ${agentToolsQuery('held-for-review')}`.execute(db);
}
