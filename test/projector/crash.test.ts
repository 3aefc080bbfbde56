import { DiscardPolicy } from '@nats-io/jetstream';
import { sql } from 'kysely';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentToolsChangedEvent } from '@mcpx/contracts';
import { ProjectorHarness, remoteTools } from '../support/projector-harness.js';
import { eventually } from '../support/system.js';

const AGENTS = 2_000;

let h: ProjectorHarness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

/**
 * Caps the agent-tools stream at `maxMsgs` messages, refusing new ones beyond it (-1: no cap, the
 * stream's own discard policy again).
 */
async function capAgentToolsStream(h: ProjectorHarness, maxMsgs: number): Promise<void> {
  const { jsm, subjects } = h.bus;
  const { config } = await jsm.streams.info(subjects.agentToolsStream);
  await jsm.streams.update(subjects.agentToolsStream, {
    ...config,
    max_msgs: maxMsgs,
    discard: maxMsgs === -1 ? DiscardPolicy.Old : DiscardPolicy.New,
  });
}

/** Every agent's set holds the new CID, and JetStream holds exactly one event per agent for its version. */
async function expectConverged(h: ProjectorHarness, agents: string[], tool: string): Promise<void> {
  const cid = (
    await h.db
      .selectFrom('projector.projected_servers')
      .select('tools')
      .where('account_id', '=', h.account)
      .executeTakeFirstOrThrow()
  ).tools[tool];
  const sets = await h.db
    .selectFrom('projector.agent_tools')
    .select(['agent_id', 'tools', 'version'])
    .where('account_id', '=', h.account)
    .execute();
  expect(sets).toHaveLength(agents.length);
  const stale = sets.filter((s) => s.tools[tool] !== cid || Object.keys(s.tools).length !== 50 || s.version !== 3);
  expect(stale.map((s) => s.agent_id)).toEqual([]);

  const stored = await h.stored();
  const change = stored.filter((e) => e.version === 3);
  const byAgent = new Map<string, AgentToolsChangedEvent[]>();
  for (const e of change) byAgent.set(e.agent, [...(byAgent.get(e.agent) ?? []), e]);
  expect(byAgent.size).toBe(agents.length);
  expect([...byAgent.values()].filter((es) => es.length !== 1)).toEqual([]);
  expect(change[0]).toEqual(expect.objectContaining({ added: {}, changed: { [tool]: cid }, removed: [] }));
}

describe('a projector killed mid-batch converges when restarted', () => {
  it('killed while publishing a 2,000-agent change (JetStream took 100 of it): every agent still gets its event, once', async () => {
    h = await ProjectorHarness.start({ instances: 0 });
    const env = { PROJECTOR_ACK_WAIT_MS: '1500' };
    const first = await h.spawnProcess(env);
    const agents = await h.seedAgents(AGENTS, ['github']);
    await h.discovered('github', remoteTools(50));
    await h.idle();
    expect((await h.stored()).length).toBe(AGENTS);

    // The stream takes HELD more messages and refuses the rest, so the projector stays in the
    // middle of the change however fast it publishes and however late this test looks: the kill
    // lands mid-batch by construction, not by winning a race against 2,000 PubAcks.
    const HELD = 100;
    await capAgentToolsStream(h, AGENTS + HELD);
    h.published.length = 0;
    await h.discovered(
      'github',
      remoteTools(50, (i) => (i === 7 ? 'Changed.' : `Tool number ${i}.`)),
    );
    // More offered than the stream takes (the core capture sees refused messages too): the
    // projector has met the cap, and holds the change open.
    await eventually(
      async () => (h!.published.filter((e) => e.version === 3).length > HELD ? true : undefined),
      30_000,
      'the projector to publish past the cap',
    );
    await first.kill();
    const before = (await h.stored()).filter((e) => e.version === 3);
    expect(before).toHaveLength(HELD);

    await capAgentToolsStream(h, -1);
    await h.spawnProcess(env);
    await h.idle(60_000);
    await expectConverged(h, agents, 'github__t07');
  });

  it('killed inside the transaction (its UPDATE blocked on an agent row): the redelivered event applies it whole', async () => {
    h = await ProjectorHarness.start({ instances: 0 });
    const env = { PROJECTOR_ACK_WAIT_MS: '1500' };
    const first = await h.spawnProcess(env);
    const agents = await h.seedAgents(AGENTS, ['github']);
    await h.discovered('github', remoteTools(50));
    await h.idle();

    // Hold one agent's row so the projector's set-based UPDATE stops in the middle.
    const blocker = new pg.Client({ connectionString: h.testDb.url });
    await blocker.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query(`SELECT 1 FROM projector.agent_sets WHERE account_id = $1 AND agent_id = $2 FOR UPDATE`, [
        h.account,
        `agent-${AGENTS - 1}`,
      ]);
      await h.discovered(
        'github',
        remoteTools(50, (i) => (i === 7 ? 'Changed.' : `Tool number ${i}.`)),
      );
      await eventually(
        async () => {
          // Another session: a transaction sees one snapshot of pg_stat_activity.
          const r = await sql<{
            n: number;
          }>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%UPDATE projector.agent_sets%'`.execute(
            h!.db,
          );
          return r.rows[0]!.n > 0 ? true : undefined;
        },
        30_000,
        'the projector UPDATE to block',
      );
      await first.kill();
    } finally {
      await blocker.query('ROLLBACK').catch(() => undefined);
      await blocker.end();
    }
    // Nothing of the interrupted transaction is visible.
    const v = await h.db
      .selectFrom('projector.agent_sets')
      .select('version')
      .where('account_id', '=', h.account)
      .where('agent_id', '=', 'agent-0')
      .executeTakeFirstOrThrow();
    expect(v.version).toBe(2);
    expect(h.published.filter((e) => e.version === 3)).toEqual([]);

    await h.spawnProcess(env);
    await h.idle(60_000);
    await expectConverged(h, agents, 'github__t07');
  });
});
