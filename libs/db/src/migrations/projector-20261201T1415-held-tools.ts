import { sql, type Kysely } from 'kysely';

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
  await sql`
    CREATE OR REPLACE VIEW projector.agent_tools AS
    SELECT a.account_id, a.agent_id, a.servers, a.revision, a.version, a.pending, a.updated_at,
      COALESCE((
        SELECT jsonb_object_agg(d.name, d.cid)
        FROM (
          SELECT t.key AS name, (array_agg(t.value))[1] AS cid
          FROM projector.projected_servers p CROSS JOIN LATERAL jsonb_each(p.tools) t
          WHERE p.account_id = a.account_id AND p.server = ANY (a.servers)
            AND NOT EXISTS (SELECT 1 FROM projector.lambda_tools l WHERE l.account_id = a.account_id AND l.agent_id = a.agent_id AND l.name = t.key)
          GROUP BY t.key
          HAVING count(*) = 1
        ) d
      ), '{}'::jsonb) AS tools,
      COALESCE((
        SELECT jsonb_agg(c.conflict ORDER BY c.name, c.server)
        FROM (
          SELECT t.key AS name, p.server,
            jsonb_build_object('name', t.key, 'server', p.server, 'heldBy',
              CASE WHEN EXISTS (SELECT 1 FROM projector.lambda_tools l WHERE l.account_id = a.account_id AND l.agent_id = a.agent_id AND l.name = t.key)
                THEN 'lambda' ELSE 'mcp' END) AS conflict
          FROM projector.projected_servers p CROSS JOIN LATERAL jsonb_each(p.tools) t
          WHERE p.account_id = a.account_id AND p.server = ANY (a.servers)
            AND (
              EXISTS (SELECT 1 FROM projector.lambda_tools l WHERE l.account_id = a.account_id AND l.agent_id = a.agent_id AND l.name = t.key)
              OR EXISTS (
                SELECT 1 FROM projector.projected_servers p2
                WHERE p2.account_id = a.account_id AND p2.server = ANY (a.servers) AND p2.server <> p.server AND p2.tools ? t.key
              )
            )
          UNION ALL
          SELECT h.key AS name, p.server,
            jsonb_build_object('name', h.key, 'server', p.server, 'heldBy', 'held_for_review', 'cid', h.value -> 'cid') AS conflict
          FROM projector.projected_servers p CROSS JOIN LATERAL jsonb_each(p.held) h
          WHERE p.account_id = a.account_id AND p.server = ANY (a.servers) AND p.deleted = false
        ) c
      ), '[]'::jsonb) AS conflicts
    FROM projector.agent_sets a`.execute(db);
}
