import { afterEach, describe, expect, it } from 'vitest';
import {
  WireError,
  agentToolsReplyValue,
  lambdaToolDocument,
  lambdaToolReplyValue,
  type LambdaToolReply,
} from '@mcpx/contracts';
import { ProjectorHarness, remoteTools } from '../support/projector-harness.js';
import { eventually } from '../support/system.js';

let h: ProjectorHarness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

async function start(): Promise<ProjectorHarness> {
  h = await ProjectorHarness.start();
  return h;
}

/** Sends a lambda request to the projector; returns the reply or the typed error. */
async function lambda(
  h: ProjectorHarness,
  op: 'set' | 'delete',
  fields: Record<string, unknown>,
): Promise<LambdaToolReply | WireError> {
  const subject = op === 'set' ? h.bus.subjects.projectorLambdaSet : h.bus.subjects.projectorLambdaDelete;
  return h.bus
    .request(subject, { account: h.account, ...fields }, lambdaToolReplyValue)
    .catch((err: unknown) => err as WireError);
}

describe('projector sync through NATS and Postgres', () => {
  it('projects a discovery onto granting agents once per server, and a replay changes and publishes nothing', async () => {
    const h = await start();
    await h.agent('a1', ['github']);
    await h.agent('a2', ['github']);
    await h.agent('other', []);
    await h.idle();
    const discovery = await h.discovered('github', remoteTools(3));
    await h.idle();

    const set = await h.toolsOf('a1');
    expect(Object.keys(set!.tools).sort()).toEqual(['github__t00', 'github__t01', 'github__t02']);
    expect(set!.version).toBe(2);
    expect((await h.toolsOf('other'))!.tools).toEqual({});
    // Documents are stored once per server, not per agent.
    const docs = await h.db
      .selectFrom('projector.tool_documents')
      .select(['name', 'cid'])
      .where('account_id', '=', h.account)
      .execute();
    expect(docs).toHaveLength(3);
    expect(Object.fromEntries(docs.map((d) => [d.name, d.cid]))).toEqual(set!.tools);

    expect(h.eventsFor('a1')).toEqual([
      { account: h.account, agent: 'a1', version: 2, added: set!.tools, changed: {}, removed: [] },
    ]);
    expect(h.eventsFor('a2')).toHaveLength(1);
    expect(h.eventsFor('other')).toHaveLength(0);

    // The same event again, as a new message: nothing changes, nothing is published.
    const before = h.published.length;
    await h.publish(h.bus.subjects.serverDiscovered(h.account, 'github'), discovery);
    await h.agent('a1', ['github']);
    await h.idle();
    expect(h.published.length).toBe(before);
    expect((await h.toolsOf('a1'))!.version).toBe(2);
    expect((await h.stored()).length).toBe(2);
  });

  it('publishes one event per agent whose set changed, with the changed CID, and none when nothing changed', async () => {
    const h = await start();
    await h.discovered('github', remoteTools(4));
    await h.discovered('linear', remoteTools(2));
    await h.agent('gh', ['github']);
    await h.agent('both', ['github', 'linear']);
    await h.agent('lin', ['linear']);
    await h.idle();
    const v = async (a: string) => (await h.toolsOf(a))!.version;
    const before = { gh: await v('gh'), both: await v('both'), lin: await v('lin') };
    const oldCid = (await h.toolsOf('gh'))!.tools.github__t01;
    h.published.length = 0;

    await h.discovered(
      'github',
      remoteTools(4, (i) => (i === 1 ? 'A new description.' : `Tool number ${i}.`)),
    );
    await h.idle();
    const newCid = (await h.toolsOf('gh'))!.tools.github__t01;
    expect(newCid).not.toBe(oldCid);
    expect(h.eventsFor('gh')).toEqual([
      {
        account: h.account,
        agent: 'gh',
        version: before.gh + 1,
        added: {},
        changed: { github__t01: newCid },
        removed: [],
      },
    ]);
    expect(h.eventsFor('both')).toEqual([
      expect.objectContaining({ version: before.both + 1, changed: { github__t01: newCid } }),
    ]);
    expect(h.eventsFor('lin')).toEqual([]);
    // The contract change rewrote one document.
    const docs = await h.db
      .selectFrom('projector.tool_documents')
      .select('cid')
      .where('account_id', '=', h.account)
      .where('server', '=', 'github')
      .execute();
    expect(docs.map((d) => d.cid)).toContain(newCid);
    expect(docs.map((d) => d.cid)).not.toContain(oldCid);

    // A new generation with the same tools, and an older generation: no change, no event.
    h.published.length = 0;
    await h.discovered(
      'github',
      remoteTools(4, (i) => (i === 1 ? 'A new description.' : `Tool number ${i}.`)),
    );
    await h.discovered('github', remoteTools(1), { generation: 1 });
    await h.idle();
    expect(h.published).toEqual([]);
    expect(Object.keys((await h.toolsOf('gh'))!.tools)).toHaveLength(4);
  });

  it('grants, revokes and deletes: documents of servers an agent does not grant leave its set', async () => {
    const h = await start();
    await h.discovered('github', remoteTools(2));
    await h.discovered('linear', remoteTools(1));
    await h.agent('a1', ['github']);
    await h.agent('a2', ['github', 'linear']);
    await h.agent('a3', ['linear']);
    await h.idle();
    h.published.length = 0;

    await h.agent('a1', ['github', 'linear']);
    await h.idle();
    expect(Object.keys((await h.toolsOf('a1'))!.tools).sort()).toEqual(['github__t00', 'github__t01', 'linear__t00']);
    expect(h.eventsFor('a1')).toEqual([
      expect.objectContaining({ added: { linear__t00: expect.any(String) }, changed: {}, removed: [] }),
    ]);

    h.published.length = 0;
    await h.agent('a1', ['linear']);
    await h.idle();
    expect(Object.keys((await h.toolsOf('a1'))!.tools)).toEqual(['linear__t00']);
    expect(h.eventsFor('a1')).toEqual([
      expect.objectContaining({ added: {}, removed: ['github__t00', 'github__t01'] }),
    ]);

    // The registry's delete: agents' grants lose the server, then the server goes.
    h.published.length = 0;
    await h.agent('a2', ['github']);
    await h.agent('a3', []);
    await h.deleted('linear');
    await h.idle();
    for (const a of ['a1', 'a2', 'a3']) {
      expect(Object.keys((await h.toolsOf(a))!.tools).filter((n) => n.startsWith('linear__'))).toEqual([]);
      expect(h.eventsFor(a)).toEqual([expect.objectContaining({ removed: ['linear__t00'] })]);
    }
    const docs = await h.db
      .selectFrom('projector.tool_documents')
      .select('name')
      .where('account_id', '=', h.account)
      .where('server', '=', 'linear')
      .execute();
    expect(docs).toEqual([]);

    // A late discovery of the deleted incarnation does not bring it back; a new one does.
    h.published.length = 0;
    await h.agent('a3', ['linear']);
    await h.discovered('linear', remoteTools(1), { generation: 99 });
    await h.idle();
    expect((await h.toolsOf('a3'))!.tools).toEqual({});
    await h.discovered('linear', remoteTools(1), { serverId: 'id-linear-2', generation: 1 });
    await h.idle();
    expect(Object.keys((await h.toolsOf('a3'))!.tools)).toEqual(['linear__t00']);
  });

  it('removes a deleted server from every agent still granting it, with one event each', async () => {
    const h = await start();
    await h.discovered('github', remoteTools(2));
    for (const a of ['a1', 'a2', 'a3']) await h.agent(a, ['github']);
    await h.idle();
    h.published.length = 0;
    await h.deleted('github');
    await h.idle();
    for (const a of ['a1', 'a2', 'a3']) {
      expect((await h.toolsOf(a))!.tools).toEqual({});
      expect(h.eventsFor(a)).toEqual([expect.objectContaining({ removed: ['github__t00', 'github__t01'] })]);
    }
    h.published.length = 0;
    await h.deleted('github');
    await h.idle();
    expect(h.published).toEqual([]);
  });
});

describe('lambdas and mcp tools', () => {
  it('refuses to save a lambda over an mcp tool, or to delete or replace an mcp document', async () => {
    const h = await start();
    await h.discovered('github', remoteTools(2));
    await h.agent('a1', ['github']);
    await h.idle();

    const over = await lambda(h, 'set', { agent: 'a1', name: 'github__t00', document: { description: 'mine' } });
    expect(over).toBeInstanceOf(WireError);
    expect((over as WireError).code).toBe('conflict');
    expect((over as WireError).message).toMatch(/disable the github server/);
    const del = await lambda(h, 'delete', { agent: 'a1', name: 'github__t01' });
    expect((del as WireError).code).toBe('conflict');
    expect((del as WireError).message).toMatch(/disable the github server/);
    const asMcp = await lambda(h, 'set', {
      agent: 'a1',
      name: 'free_name',
      document: { kind: 'mcp', description: 'x' },
    });
    expect((asMcp as WireError).code).toBe('conflict');
    const missing = await lambda(h, 'delete', { agent: 'a1', name: 'nothing' });
    expect((missing as WireError).code).toBe('not_found');
    const bad = await lambda(h, 'set', { agent: 'a1', name: 'bad name!', document: {} });
    expect((bad as WireError).code).toBe('invalid_input');
    expect(Object.keys((await h.toolsOf('a1'))!.tools)).toEqual(['github__t00', 'github__t01']);
  });

  it('saves a lambda only under the CID the registry recorded for it: another one is refused and nothing is saved', async () => {
    const h = await start();
    await h.agent('a1', []);
    await h.idle();
    const document = { description: 'mine', inputSchema: { type: 'object' } };
    const { cid } = lambdaToolDocument('mine', document);
    const other = lambdaToolDocument('mine', { ...document, description: 'another' }).cid;
    const stored = async (): Promise<string[]> =>
      (
        await h.db
          .selectFrom('projector.lambda_tools')
          .select('cid')
          .where('account_id', '=', h.account)
          .where('agent_id', '=', 'a1')
          .execute()
      ).map((r) => r.cid);
    const refused = await lambda(h, 'set', { agent: 'a1', name: 'mine', document, cid: other });
    expect(refused).toBeInstanceOf(WireError);
    expect((refused as WireError).code).toBe('internal');
    expect(await stored()).toEqual([]);
    expect(await lambda(h, 'set', { agent: 'a1', name: 'mine', document, cid })).toMatchObject({ name: 'mine', cid });
    expect(await stored()).toEqual([cid]);
  });

  it('keeps a lambda that holds a name when an mcp tool of that name arrives, records and logs the conflict', async () => {
    const h = await start();
    await h.discovered('github', remoteTools(1));
    await h.agent('a1', ['github']);
    await h.agent('a2', ['github']);
    await h.idle();
    h.published.length = 0;

    const saved = (await lambda(h, 'set', {
      agent: 'a1',
      name: 'github__t01',
      document: { description: 'My own.', inputSchema: { type: 'object' } },
    })) as LambdaToolReply;
    expect(saved.cid).toMatch(/^bafyrei/);
    await eventually(async () => (h.eventsFor('a1').length === 1 ? true : undefined));
    expect(h.eventsFor('a1')[0]).toEqual(expect.objectContaining({ added: { github__t01: saved.cid } }));

    h.published.length = 0;
    await h.discovered('github', remoteTools(2));
    await h.idle();
    const a1 = await h.toolsOf('a1');
    expect(a1!.tools).toEqual({ github__t00: expect.any(String) });
    expect(a1!.conflicts).toEqual([{ name: 'github__t01', server: 'github', heldBy: 'lambda' }]);
    expect(h.eventsFor('a1')).toEqual([]);
    expect(Object.keys((await h.toolsOf('a2'))!.tools)).toEqual(['github__t00', 'github__t01']);
    expect(h.eventsFor('a2')).toHaveLength(1);
    expect(h.logs.join('')).toContain('tool name held by a lambda');

    // The lambda may still replace itself; once deleted, the mcp tool takes the name.
    const replaced = (await lambda(h, 'set', {
      agent: 'a1',
      name: 'github__t01',
      document: { description: 'Changed.' },
    })) as LambdaToolReply;
    expect(replaced.cid).not.toBe(saved.cid);
    h.published.length = 0;
    await lambda(h, 'delete', { agent: 'a1', name: 'github__t01' });
    const after = await h.toolsOf('a1');
    expect(Object.keys(after!.tools).sort()).toEqual(['github__t00', 'github__t01']);
    expect(after!.conflicts).toEqual([]);
    await eventually(async () => (h.eventsFor('a1').length === 1 ? true : undefined));
    expect(h.eventsFor('a1')[0]).toEqual(
      expect.objectContaining({ changed: { github__t01: after!.tools.github__t01 } }),
    );
  });

  it('records the conflict when a grant brings an mcp tool onto a lambda name', async () => {
    const h = await start();
    await h.discovered('linear', remoteTools(2));
    await h.agent('a1', []);
    await h.idle();
    await lambda(h, 'set', { agent: 'a1', name: 'linear__t00', document: { description: 'Mine.' } });
    h.published.length = 0;
    await h.agent('a1', ['linear']);
    await h.idle();
    const set = await h.toolsOf('a1');
    expect(Object.keys(set!.tools)).toEqual(['linear__t01']);
    expect(set!.conflicts).toEqual([{ name: 'linear__t00', server: 'linear', heldBy: 'lambda' }]);
    expect(h.eventsFor('a1')).toEqual([
      expect.objectContaining({ added: { linear__t01: expect.any(String) }, removed: [] }),
    ]);
  });
});

describe('TOOL_NAME_STYLE=prefixed', () => {
  it('projects prefixed-style names onto agents', async () => {
    h = await ProjectorHarness.start({ env: { TOOL_NAME_STYLE: 'prefixed' } });
    await h.agent('a1', ['acme']);
    await h.idle();
    await h.discovered('acme', [{ name: 'search docs' }, { name: 'get' }]);
    await h.idle();
    expect(Object.keys((await h.toolsOf('a1'))!.tools).sort()).toEqual(['mcp_acme_get', 'mcp_acme_search_docs']);
    expect(h.eventsFor('a1')).toEqual([
      expect.objectContaining({
        added: { mcp_acme_get: expect.any(String), mcp_acme_search_docs: expect.any(String) },
      }),
    ]);
  });

  it('gives a name two granted servers project to neither (slug a + b_c against slug a_b + c), and back when one goes', async () => {
    h = await ProjectorHarness.start({ env: { TOOL_NAME_STYLE: 'prefixed' } });
    await h.agent('both', ['a', 'a_b']);
    await h.agent('only_a', ['a']);
    await h.idle();
    await h.discovered('a', [{ name: 'b_c' }, { name: 'x' }]);
    await h.idle();
    const fromA = (await h.toolsOf('both'))!.tools['mcp_a_b_c'];
    expect(fromA).toMatch(/^bafyrei/);
    h.published.length = 0;

    // The second server brings the same name: the agent granting both loses it (an event says so).
    await h.discovered('a_b', [{ name: 'c' }, { name: 'y' }]);
    await h.idle();
    const both = await h.toolsOf('both');
    expect(Object.keys(both!.tools).sort()).toEqual(['mcp_a_b_y', 'mcp_a_x']);
    expect(both!.conflicts).toEqual([
      { name: 'mcp_a_b_c', server: 'a', heldBy: 'mcp' },
      { name: 'mcp_a_b_c', server: 'a_b', heldBy: 'mcp' },
    ]);
    expect(h.eventsFor('both')).toEqual([
      expect.objectContaining({ added: { mcp_a_b_y: expect.any(String) }, changed: {}, removed: ['mcp_a_b_c'] }),
    ]);
    expect(h.logs.join('')).toContain('tool name projected by two granted servers');
    // An agent granting one of them keeps the name.
    expect((await h.toolsOf('only_a'))!.tools['mcp_a_b_c']).toBe(fromA);
    expect((await h.toolsOf('only_a'))!.conflicts).toEqual([]);

    // ListAgentTools agrees: neither document is offered.
    const reply = await h.bus.request(
      h.bus.subjects.projectorAgentTools,
      { account: h.account, agent: 'both' },
      agentToolsReplyValue,
    );
    expect(reply.documents.map((d) => d.name).sort()).toEqual(['mcp_a_b_y', 'mcp_a_x']);
    expect(reply.conflicts).toHaveLength(2);

    // One server drops its tool: the other's takes the name back.
    h.published.length = 0;
    await h.discovered('a_b', [{ name: 'y' }], { generation: 2 });
    await h.idle();
    expect((await h.toolsOf('both'))!.tools['mcp_a_b_c']).toBe(fromA);
    expect((await h.toolsOf('both'))!.conflicts).toEqual([]);
    expect(h.eventsFor('both')).toEqual([expect.objectContaining({ added: { mcp_a_b_c: fromA }, removed: [] })]);
  });

  it('applies the same rule when a grant brings the second server', async () => {
    h = await ProjectorHarness.start({ env: { TOOL_NAME_STYLE: 'prefixed' } });
    await h.discovered('a', [{ name: 'b_c' }]);
    await h.discovered('a_b', [{ name: 'c' }, { name: 'y' }]);
    await h.agent('late', ['a']);
    await h.idle();
    expect(Object.keys((await h.toolsOf('late'))!.tools)).toEqual(['mcp_a_b_c']);
    h.published.length = 0;
    await h.agent('late', ['a', 'a_b']);
    await h.idle();
    expect(Object.keys((await h.toolsOf('late'))!.tools)).toEqual(['mcp_a_b_y']);
    expect(h.eventsFor('late')).toEqual([
      expect.objectContaining({ added: { mcp_a_b_y: expect.any(String) }, removed: ['mcp_a_b_c'] }),
    ]);
  });
});
