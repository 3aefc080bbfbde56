import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RedactedMcpServer } from '@mcpx/contracts';
import { generateKeyPair } from '@mcpx/envelope';
import { startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { ApiClient } from '../support/api-client.js';
import type { ProxySystem } from '../support/proxy-system.js';
import { eventually } from '../support/system.js';
import { actionError, startApprovalSystem } from '../approvals/approval-tools.js';

/**
 * Only an OWNER makes an always_ask tool callable without a human. The owner made `echo` (no
 * hints: inherited act) always_ask; a WRITER tries every way to shed that: set it back, delete
 * the server, re-add the server under a new name at the same origin, move the server away and
 * re-add one where it was. Each is refused, and the tool keeps stopping for a human.
 */
describe('a WRITER cannot shed an always_ask override', () => {
  let system: ProxySystem;
  let upstream: TestMcpServer;
  let elsewhere: TestMcpServer;
  let writer: ApiClient;

  beforeAll(async () => {
    [{ system, upstream }, elsewhere] = await Promise.all([startApprovalSystem(), startTestMcpServer()]);
    const key = generateKeyPair();
    await system.api.act('AuthorizeSigner', { principal: key.principal, role: 'WRITER' });
    writer = new ApiClient(system.api.apiUrl, key, system.account);
    await system.api.act('SetToolPermission', { server: 'db', tool: 'echo', permission: 'always_ask' });
    await eventually(
      async () =>
        (await system.callError('agent', 'w0', 'db__echo', { text: 'x' }).catch(() => undefined))?.code ===
        'approval_required'
          ? true
          : undefined,
      15_000,
      'the override in force',
    );
  });
  afterAll(async () => {
    await system?.stop();
    await Promise.all([upstream?.close(), elsewhere?.close()]);
  });

  const servers = async (): Promise<RedactedMcpServer[]> =>
    (await system.api.act<{ servers: RedactedMcpServer[] }>('ListMcpServers')).servers;

  it('refuses each way, names the signer, and the tool still needs a human', async () => {
    const before = await servers();
    // One at a time (a promise made before it is awaited would reject unhandled).
    const attempts: Array<[string, () => Promise<unknown>]> = [
      ['set act', () => writer.act('SetToolPermission', { server: 'db', tool: 'echo', permission: 'act' })],
      ['set inherited', () => writer.act('SetToolPermission', { server: 'db', tool: 'echo', permission: null })],
      ['delete', () => writer.act('DeleteMcpServer', { name: 'db' })],
      ['re-add under a new name', () => writer.act('SetMcpServer', { name: 'db2', config: { url: upstream.url } })],
      ['move away', () => writer.act('SetMcpServer', { name: 'db', config: { url: elsewhere.url } })],
    ];
    for (const [what, attempt] of attempts) {
      const err = await actionError(attempt());
      expect({ what, code: err.code, field: err.details.field }).toEqual({ what, code: 'forbidden', field: 'signer' });
    }
    // Every attempt left the owner's records as they were.
    expect(await servers()).toEqual(before);
    expect(before.find((s) => s.name === 'db')?.tools.find((t) => t.name === 'echo')).toMatchObject({
      permission: 'always_ask',
      permissionOverridden: true,
    });
    const calls = upstream.stats.calls;
    expect((await system.callError('agent', 'w1', 'db__echo', { text: 'x' })).code).toBe('approval_required');
    expect(upstream.stats.calls).toBe(calls);
  });

  it('still lets a WRITER do what keeps the human: same-origin updates, other origins, stricter levels', async () => {
    const same = await writer.act<{ server: RedactedMcpServer }>('SetMcpServer', {
      name: 'db',
      config: { url: upstream.url, headers: { 'X-Team': 'ops' } },
    });
    expect(same.server.tools.find((t) => t.name === 'echo')).toMatchObject({
      permission: 'always_ask',
      permissionOverridden: true,
    });
    expect(
      (
        await writer.act<{ server: RedactedMcpServer }>('SetMcpServer', {
          name: 'other',
          config: { url: elsewhere.url },
        })
      ).server.status.state,
    ).toBe('ok');
    // Moving it onto db's origin is a re-add there, and refused; deleting it (no overrides) is not.
    expect((await actionError(writer.act('SetMcpServer', { name: 'other', config: { url: upstream.url } }))).code).toBe(
      'forbidden',
    );
    expect(await writer.act('DeleteMcpServer', { name: 'other' })).toEqual({ name: 'other' });
    const calls = upstream.stats.calls;
    expect((await system.callError('agent', 'w2', 'db__echo', { text: 'x' })).code).toBe('approval_required');
    expect(upstream.stats.calls).toBe(calls);
  });

  it("the OWNER may: delete and re-add starts from the inherited levels, by the owner's own decision", async () => {
    const owner = generateKeyPair();
    await system.api.act('AuthorizeSigner', { principal: owner.principal, role: 'OWNER' });
    const ownerSigner = new ApiClient(system.api.apiUrl, owner, system.account);
    const added = await ownerSigner.act<{ server: RedactedMcpServer }>('SetMcpServer', {
      name: 'db3',
      config: { url: upstream.url },
    });
    expect(added.server.tools.find((t) => t.name === 'echo')).toMatchObject({ permission: 'act' });
    expect(await ownerSigner.act('DeleteMcpServer', { name: 'db3' })).toEqual({ name: 'db3' });
  });
});
