import { afterEach, describe, expect, it } from 'vitest';
import { WireError, agentToolsReplyValue, encodePayload, lambdaToolReplyValue } from '@mcpx/contracts';
import { ProjectorHarness } from '../support/projector-harness.js';

/**
 * The projector reads its stored documents through their columns' codecs (`doc_cbor` of
 * tool_documents and lambda_tools), not a cast: a row that breaks its shape is named (column and
 * field) where it is read, and one such row does not stop the projector from starting.
 */
let h: ProjectorHarness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

describe('stored tool documents, decoded by their column codecs', () => {
  it('the search backfill fills what decodes, and logs and leaves a document that does not, instead of failing the start', async () => {
    h = await ProjectorHarness.start();
    const good = {
      kind: 'mcp',
      name: 'gh__list',
      description: 'List things.',
      inputSchema: { type: 'object' },
      permission: 'act',
      server: 'gh',
      remoteName: 'list',
    };
    const row = (name: string, doc_cbor: Uint8Array) => ({
      account_id: h!.account,
      server: 'gh',
      server_id: 's1',
      name,
      kind: 'mcp',
      cid: `cid-${name}`,
      doc_cbor,
      remote_name: null,
      description: null,
    });
    await h.db
      .insertInto('projector.tool_documents')
      .values([
        row('gh__list', encodePayload(good)),
        row('gh__broken', Uint8Array.from([0xff, 0x00])),
        row('gh__shapeless', encodePayload({ kind: 'mcp', name: 'gh__shapeless' })),
      ])
      .execute();
    // A second instance runs the backfill on its start.
    await h.startInstance();
    const rows = await h.db
      .selectFrom('projector.tool_documents')
      .select(['name', 'remote_name', 'description'])
      .where('account_id', '=', h.account)
      .orderBy('name')
      .execute();
    expect(rows).toEqual([
      { name: 'gh__broken', remote_name: null, description: null },
      { name: 'gh__list', remote_name: 'list', description: 'List things.' },
      { name: 'gh__shapeless', remote_name: null, description: null },
    ]);
    const warnings = h.logs.filter((l) => l.includes('a stored tool document does not decode'));
    expect(warnings).toHaveLength(2);
    expect(warnings.join('\n')).toContain('projector.tool_documents.doc_cbor');
  });

  it("a lambda row that breaks its shape is the projector's fault, named in its log; the agent's tools are not half-read", async () => {
    h = await ProjectorHarness.start();
    await h.agent('a1', []);
    await h.idle();
    const saved = await h.bus.request(
      h.bus.subjects.projectorLambdaSet,
      {
        account: h.account,
        agent: 'a1',
        name: 'mine',
        document: { description: 'Mine.', inputSchema: { type: 'object' } },
      },
      lambdaToolReplyValue,
    );
    expect(saved.name).toBe('mine');
    await h.db
      .updateTable('projector.lambda_tools')
      .set({ doc_cbor: encodePayload({ kind: 'lambda', name: 'mine', description: 'Mine.', enabled: 'yes' }) })
      .where('account_id', '=', h.account)
      .execute();
    const err = await h.bus
      .request(h.bus.subjects.projectorAgentTools, { account: h.account, agent: 'a1' }, agentToolsReplyValue)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WireError);
    expect(err).toMatchObject({ code: 'internal' });
    expect(
      h.logs.some((l) => l.includes('request handler failed') && l.includes('projector.lambda_tools.doc_cbor')),
    ).toBe(true);
  });
});
