import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPair } from '@mcpx/envelope';
import { startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { ApiClient } from '../support/api-client.js';
import { RegistryHarness } from '../support/registry-harness.js';

/**
 * Signers as attacks: a revoked key keeps trying, and an AGENT signer bound to one agent reaches
 * for the account's other agents. Each attempt is refused and the owner's data is as it was.
 */
describe('signers: revocation and AGENT binding', () => {
  let h: RegistryHarness;
  let upstream: TestMcpServer;
  let owner: ApiClient;

  beforeAll(async () => {
    [h, upstream] = await Promise.all([RegistryHarness.start(), startTestMcpServer()]);
    owner = h.api();
    await owner.act('SetMcpServer', { name: 'demo', config: { url: upstream.url } });
    await owner.act('CreateAgent', { name: 'mine', definition: { mcpServers: ['demo'] } });
    await owner.act('CreateAgent', { name: 'theirs', definition: { mcpServers: ['demo'] } });
  });
  afterAll(async () => {
    await h?.stop();
    await upstream?.close();
  });

  it('a revoked signer is refused from its next envelope on; the account key cannot be revoked', async () => {
    const key = generateKeyPair();
    const writer = new ApiClient(h.apiUrl, key, owner.principal);
    await owner.act('AuthorizeSigner', { principal: key.principal, role: 'WRITER' });
    await writer.act('ListMcpServers');
    expect(await owner.act('RevokeSigner', { principal: key.principal })).toEqual({ revoked: true });
    await expect(writer.act('ListMcpServers')).rejects.toMatchObject({
      code: 'forbidden',
      details: { field: 'signer' },
    });
    await expect(writer.act('SetMcpServer', { name: 'evil', config: { url: upstream.url } })).rejects.toMatchObject({
      code: 'forbidden',
    });
    expect((await owner.act('ListMcpServers')).servers.map((s: { name: string }) => s.name)).toEqual(['demo']);
    // Revoking again says there was nothing to revoke; the account key is always its OWNER.
    expect(await owner.act('RevokeSigner', { principal: key.principal })).toEqual({ revoked: false });
    await expect(owner.act('RevokeSigner', { principal: owner.principal })).rejects.toMatchObject({
      code: 'conflict',
      details: { field: 'principal' },
    });
    await expect(owner.act('RevokeSigner', { principal: 'nope' })).rejects.toMatchObject({
      code: 'invalid_input',
      details: { field: 'principal' },
    });
  });

  it('only an OWNER revokes', async () => {
    const writerKey = generateKeyPair();
    const victim = generateKeyPair();
    await owner.act('AuthorizeSigner', { principal: writerKey.principal, role: 'WRITER' });
    await owner.act('AuthorizeSigner', { principal: victim.principal, role: 'WRITER' });
    const writer = new ApiClient(h.apiUrl, writerKey, owner.principal);
    await expect(writer.act('RevokeSigner', { principal: victim.principal })).rejects.toMatchObject({
      code: 'forbidden',
      details: { field: 'signer' },
    });
    await new ApiClient(h.apiUrl, victim, owner.principal).act('ListMcpServers');
  });

  it('an AGENT signer acts for the agents it is bound to and no other', async () => {
    const key = generateKeyPair();
    const agentSigner = new ApiClient(h.apiUrl, key, owner.principal);
    await expect(owner.act('AuthorizeSigner', { principal: key.principal, role: 'AGENT' })).rejects.toMatchObject({
      code: 'invalid_input',
      details: { field: 'agents' },
    });
    await expect(
      owner.act('AuthorizeSigner', { principal: key.principal, role: 'AGENT', agents: ['mine', 'ghost'] }),
    ).rejects.toMatchObject({ code: 'not_found', details: { field: 'agents[1]' } });
    expect(await owner.act('AuthorizeSigner', { principal: key.principal, role: 'AGENT', agents: ['mine'] })).toEqual({
      signer: { principal: key.principal, role: 'AGENT', agents: ['mine'] },
    });

    expect((await agentSigner.act('GetAgent', { agent: 'mine' })).agent.name).toBe('mine');
    await agentSigner.act('ListAgentTools', { agent: 'mine' });
    expect((await agentSigner.act('ListAgents')).agents.map((a: { name: string }) => a.name)).toEqual(['mine']);

    const theirs = (await owner.act('GetAgent', { agent: 'theirs' })).agent.id as string;
    for (const ref of ['theirs', theirs, 'no-such-agent']) {
      for (const [type, fields] of [
        ['GetAgent', {}],
        ['ListAgentTools', {}],
        ['InvokeTool', { tool: 'demo__echo', arguments: { text: 'x' } }],
        ['SearchTools', { query: 'echo' }],
      ] as const) {
        await expect(agentSigner.act(type, { agent: ref, ...fields }), `${type} ${ref}`).rejects.toMatchObject({
          code: 'forbidden',
          details: { field: 'agent' },
        });
      }
    }
    // A search over every agent of the account is refused; one over its own agent is not.
    await expect(agentSigner.act('SearchTools', { query: 'echo' })).rejects.toMatchObject({
      code: 'forbidden',
      details: { field: 'agent' },
    });
    // Re-binding replaces the set: the signer now serves the other agent only.
    await owner.act('AuthorizeSigner', { principal: key.principal, role: 'AGENT', agents: ['theirs'] });
    await expect(agentSigner.act('GetAgent', { agent: 'mine' })).rejects.toMatchObject({ code: 'forbidden' });
    expect((await agentSigner.act('GetAgent', { agent: 'theirs' })).agent.name).toBe('theirs');
  });
});
