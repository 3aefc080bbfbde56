import { sql, type RawBuilder } from 'kysely';

/**
 * The three shapes `projector.agent_tools` has had, each frozen as its migration created it (a
 * migration that replaces the view, and the one that puts it back on the way down, name the
 * same shape; nothing here may change once a migration uses it):
 * - `lambda-held`: every tool of every granted server, less the names a lambda of the agent holds
 *   (those are its conflicts, `heldBy: 'lambda'`);
 * - `name-conflicts`: a name two granted servers project is taken by neither and reported
 *   (`heldBy: 'mcp'`), as a lambda-held one is;
 * - `held-for-review`: as `name-conflicts`, and a pinned server's tools held for review are
 *   reported too (`heldBy: 'held_for_review'`, with the held contract's CID).
 */
export type AgentToolsView = 'lambda-held' | 'name-conflicts' | 'held-for-review';

const LAMBDA_HOLDS = `EXISTS (SELECT 1 FROM projector.lambda_tools l WHERE l.account_id = a.account_id AND l.agent_id = a.agent_id AND l.name = t.key)`;
const EACH_GRANTED_TOOL = `FROM projector.projected_servers p CROSS JOIN LATERAL jsonb_each(p.tools) t
        WHERE p.account_id = a.account_id AND p.server = ANY (a.servers)`;

const LAMBDA_HELD = `
      COALESCE((
        SELECT jsonb_object_agg(t.key, t.value)
        ${EACH_GRANTED_TOOL}
          AND NOT ${LAMBDA_HOLDS}
      ), '{}'::jsonb) AS tools,
      COALESCE((
        SELECT jsonb_agg(jsonb_build_object('name', t.key, 'server', p.server, 'heldBy', 'lambda') ORDER BY t.key)
        ${EACH_GRANTED_TOOL}
          AND ${LAMBDA_HOLDS}
      ), '[]'::jsonb) AS conflicts`;

const HELD_FOR_REVIEW = `
          UNION ALL
          SELECT h.key AS name, p.server,
            jsonb_build_object('name', h.key, 'server', p.server, 'heldBy', 'held_for_review', 'cid', h.value -> 'cid') AS conflict
          FROM projector.projected_servers p CROSS JOIN LATERAL jsonb_each(p.held) h
          WHERE p.account_id = a.account_id AND p.server = ANY (a.servers) AND p.deleted = false`;

function nameConflicts(heldForReview: boolean): string {
  return `
      COALESCE((
        SELECT jsonb_object_agg(d.name, d.cid)
        FROM (
          SELECT t.key AS name, (array_agg(t.value))[1] AS cid
          ${EACH_GRANTED_TOOL}
            AND NOT ${LAMBDA_HOLDS}
          GROUP BY t.key
          HAVING count(*) = 1
        ) d
      ), '{}'::jsonb) AS tools,
      COALESCE((
        SELECT jsonb_agg(c.conflict ORDER BY c.name, c.server)
        FROM (
          SELECT t.key AS name, p.server,
            jsonb_build_object('name', t.key, 'server', p.server, 'heldBy',
              CASE WHEN ${LAMBDA_HOLDS}
                THEN 'lambda' ELSE 'mcp' END) AS conflict
          ${EACH_GRANTED_TOOL}
            AND (
              ${LAMBDA_HOLDS}
              OR EXISTS (
                SELECT 1 FROM projector.projected_servers p2
                WHERE p2.account_id = a.account_id AND p2.server = ANY (a.servers) AND p2.server <> p.server AND p2.tools ? t.key
              )
            )${heldForReview ? HELD_FOR_REVIEW : ''}
        ) c
      ), '[]'::jsonb) AS conflicts`;
}

const BODIES: Record<AgentToolsView, string> = {
  'lambda-held': LAMBDA_HELD,
  'name-conflicts': nameConflicts(false),
  'held-for-review': nameConflicts(true),
};

/** The view's query in the shape `view` (`CREATE [OR REPLACE] VIEW projector.agent_tools AS` goes before it). */
export function agentToolsQuery(view: AgentToolsView): RawBuilder<unknown> {
  return sql.raw(`
    SELECT a.account_id, a.agent_id, a.servers, a.revision, a.version, a.pending, a.updated_at,${BODIES[view]}
    FROM projector.agent_sets a`);
}
