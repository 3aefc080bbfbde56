import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPair } from '@mcpx/envelope';
import { startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { shiftingTools, ToolShifts } from '../servers/shifting-tools.js';
import { ApiClient } from '../support/api-client.js';
import { RegistryHarness } from '../support/registry-harness.js';

/**
 * Who may review, and bad input to the review and audit actions: typed errors naming the field,
 * nothing written. A second registry instance on the same database runs with
 * PIN_WRITERS_MAY_REVIEW=true and PIN_DEFAULT=review.
 */
describe('reviews: roles, policy and bad input', () => {
  let h: RegistryHarness;
  let remote: TestMcpServer;
  let permissive: string;
  beforeAll(async () => {
    h = await RegistryHarness.start({ projector: true });
    remote = await startTestMcpServer({ era: 'modern', tools: shiftingTools() });
    permissive = (await h.addRegistry({ PIN_WRITERS_MAY_REVIEW: 'true', PIN_DEFAULT: 'review' })).url;
  });
  afterAll(async () => {
    await h?.stop();
    await remote?.close();
  });

  const heldChange = async (owner: ApiClient): Promise<{ cid: string }> => {
    remote.setTools(shiftingTools());
    await owner.act('SetMcpServer', { name: 'mail', config: { url: remote.url, pin: 'review' } });
    remote.setTools(ToolShifts.schema());
    await owner.act('RefreshMcpServer', { name: 'mail' });
    const [change] = (await owner.act('ListToolChanges')).changes as Array<{ cid: string }>;
    return change!;
  };

  it('an OWNER decides; a WRITER may list but not decide unless the operator lets writers review; an AGENT may not list', async () => {
    const owner = h.api();
    const change = await heldChange(owner);
    const writerKey = generateKeyPair();
    const agentKey = generateKeyPair();
    await owner.act('AuthorizeSigner', { principal: writerKey.principal, role: 'WRITER' });
    const { agent } = await owner.act('CreateAgent', { name: 'bot', definition: { mcpServers: ['mail'] } });
    await owner.act('AuthorizeSigner', { principal: agentKey.principal, role: 'AGENT', agents: [agent.id] });
    const writer = new ApiClient(h.apiUrl, writerKey, owner.principal);
    const agentSigner = new ApiClient(h.apiUrl, agentKey, owner.principal);
    expect((await writer.act('ListToolChanges')).changes).toHaveLength(1);
    await expect(
      writer.act('AcceptToolChange', { server: 'mail', tool: 'send_email', cid: change.cid }),
    ).rejects.toMatchObject({ code: 'forbidden', details: { field: 'signer' } });
    await expect(writer.act('ListAuditEvents')).rejects.toMatchObject({
      code: 'forbidden',
      details: { field: 'signer' },
    });
    await expect(agentSigner.act('ListToolChanges')).rejects.toMatchObject({ code: 'forbidden' });
    await expect(
      agentSigner.act('AcceptToolChange', { server: 'mail', tool: 'send_email', cid: change.cid }),
    ).rejects.toMatchObject({ code: 'forbidden' });
    expect((await owner.act('ListToolChanges')).changes).toHaveLength(1);
    // Where the operator lets writers review, the same WRITER may.
    const allowed = new ApiClient(permissive, writerKey, owner.principal);
    expect(
      await allowed.act('RejectToolChange', { server: 'mail', tool: 'send_email', cid: change.cid }),
    ).toMatchObject({ decision: 'rejected' });
    const decided = (await owner.act('ListAuditEvents', { action: 'RejectToolChange' })).events;
    expect(decided).toEqual([expect.objectContaining({ signer: writerKey.principal, role: 'WRITER' })]);
  });

  it('PIN_DEFAULT pins a new server that names no pin; an explicit off wins', async () => {
    const owner = new ApiClient(permissive);
    expect((await owner.act('SetMcpServer', { name: 'a', config: { url: remote.url } })).server.pin).toBe('review');
    expect(
      (await owner.act('SetMcpServer', { name: 'b', config: { url: remote.url, pin: 'off' } })).server.pin,
    ).toBeUndefined();
  });

  it('bad input is a typed error naming the field, and writes nothing', async () => {
    const owner = h.api();
    const change = await heldChange(owner);
    const before = await h.settledDigest();
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['ListToolChanges', { status: 'maybe' }, 'status'],
      ['ListToolChanges', { server: 42 }, 'server'],
      ['ListToolChanges', { server: 'nope' }, 'server'],
      ['AcceptToolChange', { tool: 'send_email', cid: change.cid }, 'server'],
      ['AcceptToolChange', { server: 'mail', cid: change.cid }, 'tool'],
      ['AcceptToolChange', { server: 'mail', tool: 'send_email' }, 'cid'],
      ['AcceptToolChange', { server: 'nope', tool: 'send_email', cid: change.cid }, 'server'],
      [
        'RejectToolChange',
        { server: 'mail', tool: 'send_email', cid: 'bafyreiaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' },
        'cid',
      ],
      ['ListAuditEvents', { limit: 0 }, 'limit'],
      ['ListAuditEvents', { cursor: 'abc' }, 'cursor'],
      ['ListAuditEvents', { since: 'yesterday' }, 'since'],
      ['ListAuditEvents', { action: '' }, 'action'],
      ['SetMcpServer', { name: 'mail', config: { url: remote.url, pin: 'always' } }, 'config.pin'],
    ];
    for (const [type, fields, field] of cases) {
      const err = await owner.act(type, fields).then(
        () => undefined,
        (e: unknown) => e as { code: string; details: { field?: string } },
      );
      expect(err, `${type} ${JSON.stringify(fields)}`).toMatchObject({ details: { field } });
      expect(['invalid_input', 'not_found', 'conflict']).toContain(err!.code);
    }
    expect(await h.tableDigest()).toEqual(before);
  });
});
