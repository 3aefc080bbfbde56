import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPair } from '@mcpx/envelope';
import { echoTool, startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { ApiClient } from '../support/api-client.js';
import { OAuthSystem } from '../support/oauth-system.js';
import { RegistryHarness } from '../support/registry-harness.js';

const ACCESS = 'gho_auditVendorAccess777';
const REFRESH = 'ghr_auditVendorRefresh888';

interface AuditEvent {
  signer: string;
  role: string;
  action: string;
  target: { kind: string; name: string };
  before?: unknown;
  after?: unknown;
}

async function audit(api: ApiClient, filter: Record<string, unknown>): Promise<AuditEvent[]> {
  return (await api.act<{ events: AuditEvent[] }>('ListAuditEvents', filter)).events;
}

/** The audit gaps of the pins work, closed: signer changes, vendor connections and OAuth authorizations asked for, never a secret. */
describe('audit: signers and vendor connections', () => {
  let h: RegistryHarness;
  let upstream: TestMcpServer;

  beforeAll(async () => {
    upstream = await startTestMcpServer({
      era: 'modern',
      requireHeader: { name: 'Authorization', value: `Bearer ${ACCESS}` },
      tools: [echoTool()],
    });
    h = await RegistryHarness.start({
      registry: { reprobe: { baseMs: 600_000 } },
      env: { BUILTIN_ENDPOINTS: `github=${upstream.url}` },
    });
  });
  afterAll(async () => {
    await h?.stop();
    await upstream?.close();
  });

  it('AuthorizeSigner and RevokeSigner are recorded with the role and agents before and after; a refused or empty change records nothing', async () => {
    const owner = h.api();
    const key = generateKeyPair();
    await owner.act('SetMcpServer', { name: 'plain', config: { url: upstream.url } });
    const { agent } = await owner.act('CreateAgent', { name: 'bot', definition: { mcpServers: ['plain'] } });

    await owner.act('AuthorizeSigner', { principal: key.principal, role: 'WRITER' });
    await owner.act('AuthorizeSigner', { principal: key.principal, role: 'AGENT', agents: [agent.id] });
    // Refused (bad role, an AGENT with no agents): nothing recorded.
    await expect(owner.act('AuthorizeSigner', { principal: key.principal, role: 'ROOT' })).rejects.toMatchObject({
      code: 'invalid_input',
      details: { field: 'role' },
    });
    await expect(owner.act('AuthorizeSigner', { principal: key.principal, role: 'AGENT' })).rejects.toMatchObject({
      code: 'invalid_input',
      details: { field: 'agents' },
    });
    // A WRITER may not change signers, and is not recorded doing so.
    const writerKey = generateKeyPair();
    await owner.act('AuthorizeSigner', { principal: writerKey.principal, role: 'WRITER' });
    const writer = new ApiClient(h.apiUrl, writerKey, owner.principal);
    await expect(writer.act('AuthorizeSigner', { principal: key.principal, role: 'OWNER' })).rejects.toMatchObject({
      code: 'forbidden',
    });

    const authorized = (await audit(owner, { action: 'AuthorizeSigner', target: key.principal })).reverse();
    expect(authorized).toHaveLength(2);
    expect(authorized[0]).toMatchObject({
      signer: owner.principal,
      role: 'OWNER',
      target: { kind: 'signer', name: key.principal },
      after: { role: 'WRITER' },
    });
    expect(authorized[0]?.before ?? null).toBeNull();
    expect(authorized[1]).toMatchObject({ before: { role: 'WRITER' }, after: { role: 'AGENT', agents: ['bot'] } });

    expect(await owner.act('RevokeSigner', { principal: key.principal })).toEqual({ revoked: true });
    // A second revoke changes nothing and records nothing.
    expect(await owner.act('RevokeSigner', { principal: key.principal })).toEqual({ revoked: false });
    const revoked = await audit(owner, { action: 'RevokeSigner' });
    expect(revoked).toHaveLength(1);
    expect(revoked[0]).toMatchObject({
      signer: owner.principal,
      target: { kind: 'signer', name: key.principal },
      before: { role: 'AGENT', agents: ['bot'] },
    });
    expect(revoked[0]?.after ?? null).toBeNull();
    // The revoked key is refused: the recorded change is the real one.
    await expect(new ApiClient(h.apiUrl, key, owner.principal).act('ListAgents')).rejects.toMatchObject({
      code: 'forbidden',
    });
  });

  it('SetVendorConnection and DeleteVendorConnection are recorded (the vendor, its built-ins, each agent whose grant went), never a token', async () => {
    const owner = h.api();
    await owner.act('SetVendorConnection', {
      vendor: 'github',
      accessToken: ACCESS,
      refreshToken: REFRESH,
      expiresAt: '2031-01-01T00:00:00Z',
    });
    const { agent } = await owner.act('CreateAgent', { name: 'coder', definition: { mcpServers: ['github'] } });
    await owner.act('DeleteVendorConnection', { vendor: 'github' });
    // Refused: nothing to disconnect, nothing recorded.
    await expect(owner.act('DeleteVendorConnection', { vendor: 'github' })).rejects.toMatchObject({
      code: 'not_found',
      details: { field: 'vendor' },
    });

    const set = await audit(owner, { action: 'SetVendorConnection' });
    expect(set).toHaveLength(1);
    expect(set[0]).toMatchObject({
      target: { kind: 'vendor', name: 'github' },
      after: { vendor: 'github', servers: ['github'], refreshToken: true, expiresAt: '2031-01-01T00:00:00.000Z' },
    });
    const deleted = await audit(owner, { action: 'DeleteVendorConnection' });
    expect(deleted.map((e) => e.target)).toEqual(
      expect.arrayContaining([
        { kind: 'vendor', name: 'github' },
        { kind: 'agent', name: 'coder' },
      ]),
    );
    expect(deleted).toHaveLength(2);
    expect(deleted.find((e) => e.target.kind === 'agent')).toMatchObject({
      before: { mcpServers: ['github'] },
      after: { mcpServers: [] },
    });
    expect(deleted.find((e) => e.target.kind === 'vendor')).toMatchObject({
      before: { vendor: 'github', servers: ['github'] },
    });
    expect((await owner.act('GetAgent', { agent: agent.id })).agent.definition.mcpServers).toEqual([]);

    // Neither token anywhere in the log, as listed or as stored.
    const everything = JSON.stringify(await audit(owner, { limit: 200 }));
    const stored = JSON.stringify(
      await h.sql.selectFrom('registry.audit_events').selectAll().where('account_id', '=', owner.principal).execute(),
    );
    for (const text of [everything, stored]) {
      expect(text).not.toContain(ACCESS);
      expect(text).not.toContain(REFRESH);
    }
  });
});

describe('audit: AuthorizeMcpServer', () => {
  let oauth: OAuthSystem;
  beforeAll(async () => {
    oauth = await OAuthSystem.start({ serviceName: 'mcpx-audit-authorize' });
  });
  afterAll(async () => {
    await oauth?.stop();
  });

  it('who asked for an authorization of which server and how it went, never the URL or its ticket', async () => {
    const owner = new ApiClient(oauth.system.apiUrl);
    await owner.act('SetMcpServer', { name: 'guarded', config: { url: oauth.upstream.url, auth: 'oauth' } });
    const asked = await owner.act<{ authorizationUrl?: string }>('AuthorizeMcpServer', { name: 'guarded' });
    expect(typeof asked.authorizationUrl).toBe('string');
    const events = await audit(owner, { action: 'AuthorizeMcpServer' });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      signer: owner.principal,
      role: 'OWNER',
      target: { kind: 'server', name: 'guarded' },
      after: { outcome: 'authorization_url_issued', state: 'auth_required' },
    });
    const url = new URL(asked.authorizationUrl!);
    const text = JSON.stringify(await audit(owner, { limit: 200 }));
    expect(text).not.toContain(asked.authorizationUrl!);
    expect(text).not.toContain(url.pathname.split('/').at(-1)!);
    // Refused (no such server): nothing recorded.
    await expect(owner.act('AuthorizeMcpServer', { name: 'absent' })).rejects.toMatchObject({
      code: 'not_found',
      details: { field: 'name' },
    });
    expect(await audit(owner, { action: 'AuthorizeMcpServer' })).toHaveLength(1);
  });
});
