import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { ProjectorHarness, remoteTools } from '../support/projector-harness.js';
import { eventually } from '../support/system.js';

let h: ProjectorHarness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

/**
 * Changes close out of order: one whose publish failed stays open (its events wait in the agents'
 * rows for the redelivery or the sweep) while later changes of the same agent are published and
 * closed. Its event must survive them. Seen in the multi-node run: an agent's stream held versions
 * 2..17 and never 1 (a later change kept only the events of the open change it found last).
 */
describe('an open change behind closed ones', () => {
  it('keeps its event through later changes of the same agent, and the sweep publishes it: every version reaches the stream', async () => {
    h = await ProjectorHarness.start({ ackWaitMs: 2_000 });
    const [agent] = await h.seedAgents(1, ['github']);
    await h.discovered('github', remoteTools(3));
    await h.idle();
    const first = (await h.stored()).map((e) => e.version);
    expect(first).toHaveLength(1);
    const v = first[0]!;

    // A change committed and not yet published: the state a failed publish leaves (version v + 1).
    await sql`UPDATE projector.agent_sets SET version = version + 1,
        pending = COALESCE(pending, '[]'::jsonb) || jsonb_build_array(jsonb_build_object('change', 'x-open', 'version', version + 1))
      WHERE account_id = ${h.account} AND agent_id = ${agent}`.execute(h.db);
    await sql`INSERT INTO projector.open_changes (id, account_id, diff) VALUES ('x-open', ${h.account}, ${JSON.stringify({ added: {}, changed: {}, removed: [] })})`.execute(
      h.db,
    );

    // Two later changes, each published and closed (versions v + 2 and v + 3).
    await h.discovered(
      'github',
      remoteTools(3, (i) => (i === 0 ? 'Changed once.' : `Tool number ${i}.`)),
    );
    await h.idle();
    await h.discovered(
      'github',
      remoteTools(3, (i) => (i === 0 ? 'Changed twice.' : `Tool number ${i}.`)),
    );
    await h.idle();
    const row = await h.db
      .selectFrom('projector.agent_sets')
      .select(['version', 'pending'])
      .where('account_id', '=', h.account)
      .where('agent_id', '=', agent!)
      .executeTakeFirstOrThrow();
    expect(row.version).toBe(v + 3);
    expect(row.pending?.map((p) => p.change)).toContain('x-open');

    // The open change's projector is gone: the sweep publishes it from the rows.
    await sql`UPDATE projector.open_changes SET created_at = now() - interval '1 hour' WHERE id = 'x-open'`.execute(
      h.db,
    );
    const versions = await eventually(
      async () => {
        const seen = (await h!.stored()).map((e) => e.version).sort((a, b) => a - b);
        return seen.length === 4 ? seen : undefined;
      },
      30_000,
      'the swept event',
    );
    expect(versions).toEqual([v, v + 1, v + 2, v + 3]);
  });
});
