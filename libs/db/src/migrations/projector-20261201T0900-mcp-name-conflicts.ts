import { sql, type Kysely } from 'kysely';

/**
 * Two granted servers can project the same tool name: `mcp_a_b_c` is slug `a` + tool `b_c` and
 * slug `a_b` + tool `c` in the prefixed style (and `a__b` + `c` against `a` + `b__c` in the
 * default one). The first view let whichever row came last win, silently and not even the same
 * one every time. Now neither takes the name: both are left out of the agent's `tools` and
 * reported as conflicts (`heldBy: 'mcp'`), as a lambda-held name is (`heldBy: 'lambda'`). The
 * projector's own reading of a set (services/projector/src/agent-sets.ts) applies the same rule.
 */
export async function up(db: Kysely<any>): Promise<void> {
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
        ) c
      ), '[]'::jsonb) AS conflicts
    FROM projector.agent_sets a`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    CREATE OR REPLACE VIEW projector.agent_tools AS
    SELECT a.account_id, a.agent_id, a.servers, a.revision, a.version, a.pending, a.updated_at,
      COALESCE((
        SELECT jsonb_object_agg(t.key, t.value)
        FROM projector.projected_servers p CROSS JOIN LATERAL jsonb_each(p.tools) t
        WHERE p.account_id = a.account_id AND p.server = ANY (a.servers)
          AND NOT EXISTS (SELECT 1 FROM projector.lambda_tools l WHERE l.account_id = a.account_id AND l.agent_id = a.agent_id AND l.name = t.key)
      ), '{}'::jsonb) AS tools,
      COALESCE((
        SELECT jsonb_agg(jsonb_build_object('name', t.key, 'server', p.server, 'heldBy', 'lambda') ORDER BY t.key)
        FROM projector.projected_servers p CROSS JOIN LATERAL jsonb_each(p.tools) t
        WHERE p.account_id = a.account_id AND p.server = ANY (a.servers)
          AND EXISTS (SELECT 1 FROM projector.lambda_tools l WHERE l.account_id = a.account_id AND l.agent_id = a.agent_id AND l.name = t.key)
      ), '[]'::jsonb) AS conflicts
    FROM projector.agent_sets a`.execute(db);
}
