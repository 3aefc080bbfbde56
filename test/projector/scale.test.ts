import { afterEach, describe, expect, it } from 'vitest';
import { buildToolDocuments, documentCid, type RemoteTool } from '@mcpx/domain';
import { ProjectorHarness, remoteTools } from '../support/projector-harness.js';

let h: ProjectorHarness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

const SERVERS = ['alpha', 'beta', 'gamma'];

function toolsAt(server: string, generation: number): RemoteTool[] {
  // Each generation changes one description and grows or shrinks the list.
  return remoteTools(3 + ((generation + server.length) % 3), (i) =>
    i === generation % 3 ? `Generation ${generation} of ${server}.` : `Tool ${i}.`,
  );
}

function expectedSet(grants: string[], generation: number): Record<string, string> {
  const out: Record<string, string> = {};
  for (const s of grants)
    for (const d of buildToolDocuments(s, toolsAt(s, generation), { style: 'double_underscore' }))
      out[d.name] = documentCid(d);
  return out;
}

describe('projector at scale', () => {
  it('a contract change is one document write, whatever the number of agents', async () => {
    h = await ProjectorHarness.start();
    await h.seedAgents(500, ['alpha']);
    await h.discovered('alpha', remoteTools(10));
    await h.idle();
    const before = await h.db
      .selectFrom('projector.tool_documents')
      .select(['name', 'cid'])
      .where('account_id', '=', h.account)
      .execute();
    await h.discovered(
      'alpha',
      remoteTools(10, (i) => (i === 3 ? 'New.' : `Tool number ${i}.`)),
    );
    await h.idle();
    const after = await h.db
      .selectFrom('projector.tool_documents')
      .select(['name', 'cid'])
      .where('account_id', '=', h.account)
      .execute();
    expect(after).toHaveLength(10);
    const changed = after.filter((d) => before.find((b) => b.name === d.name)?.cid !== d.cid);
    expect(changed.map((d) => d.name)).toEqual(['alpha__t03']);
    // The agents' sets follow from the server's map: every agent sees the new document.
    const sets = await h.db
      .selectFrom('projector.agent_tools')
      .select('tools')
      .where('account_id', '=', h.account)
      .execute();
    expect(sets.every((s) => s.tools.alpha__t03 === changed[0]!.cid)).toBe(true);
    expect(h.published.filter((e) => e.version === 3)).toHaveLength(500);
  });

  it('two projector instances share the durable consumer without double effects', async () => {
    h = await ProjectorHarness.start({ instances: 2 });
    const agents = await h.seedAgents(200, []);
    const grants = new Map<string, string[]>();
    // Many events at once: grants, discoveries of three servers over five generations, replays.
    const events: Array<Promise<unknown>> = [];
    agents.forEach((agent, i) => {
      const g = SERVERS.filter((_, k) => (i >> k) & 1);
      grants.set(agent, g);
      events.push(h!.agent(agent, g));
    });
    for (let gen = 1; gen <= 5; gen++) {
      for (const s of SERVERS) {
        const e = await h.discovered(s, toolsAt(s, gen), { generation: gen });
        if (gen % 2 === 0) events.push(h.publish(h.bus.subjects.serverDiscovered(h.account, s), e));
      }
    }
    // Some agents change their grant again, one event replayed.
    for (const agent of agents.slice(0, 50)) {
      grants.set(agent, ['beta']);
      events.push(h.agent(agent, ['beta']));
    }
    await Promise.all(events);
    await h.idle(60_000);

    const sets = await h.db
      .selectFrom('projector.agent_tools')
      .select(['agent_id', 'tools', 'version'])
      .where('account_id', '=', h.account)
      .execute();
    const wrong = sets.filter(
      (s) => JSON.stringify(sortKeys(s.tools)) !== JSON.stringify(sortKeys(expectedSet(grants.get(s.agent_id)!, 5))),
    );
    expect(wrong.map((s) => s.agent_id)).toEqual([]);

    // JetStream holds one event per agent and version: versions 2..final, no gap, no repeat.
    const stored = await h.stored();
    const versions = new Map<string, number[]>();
    for (const e of stored) versions.set(e.agent, [...(versions.get(e.agent) ?? []), e.version]);
    for (const s of sets) {
      const got = (versions.get(s.agent_id) ?? []).sort((a, b) => a - b);
      expect({ agent: s.agent_id, versions: got }).toEqual({
        agent: s.agent_id,
        versions: Array.from({ length: s.version - 1 }, (_, i) => i + 2),
      });
    }
    // And the events, applied in version order, rebuild each agent's set.
    for (const s of sets) {
      const state: Record<string, string> = {};
      for (const e of stored.filter((x) => x.agent === s.agent_id).sort((a, b) => a.version - b.version)) {
        Object.assign(state, e.added, e.changed);
        for (const n of e.removed) delete state[n];
      }
      expect(sortKeys(state)).toEqual(sortKeys(s.tools));
    }
  });
});

function sortKeys(m: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(m).sort(([a], [b]) => (a < b ? -1 : 1)));
}
