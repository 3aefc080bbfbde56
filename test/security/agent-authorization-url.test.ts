/**
 * Attack: an AGENT signer (an agent runtime's key, the model's side) reads the account's servers
 * to find the authorization URL of a server waiting for its owner, and opens it to complete the
 * owner's OAuth. No status carries a URL any more (an OWNER or
 * WRITER asks for a ticket of their own); the AGENT's view says the owner must authorize, and
 * the AGENT may not ask for a ticket.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import { describe, expect, it } from 'vitest';
import { makeSubjects, type RedactedMcpServer, type WireError } from '@mcpx/contracts';
import { generateKeyPair } from '@mcpx/envelope';
import { ProxyClient } from '@mcpx/proxy-client';
import type { TestMcpServer, TestOAuthServer } from '../servers/index.js';
import { ApiClient } from '../support/api-client.js';
import { connectOAuthServer, createProjectedAgent } from '../support/fixtures/agents.js';
import { TestBrowser } from '../support/oauth-browser.js';
import { natsPerSuite, oauthSystemPerSuite } from '../support/fixtures/suites.js';
import type { InProcessSystem } from '../support/system.js';

type StatusView = RedactedMcpServer['status'] & { needsOwnerAuthorization?: boolean };

describe('AGENT signers never see an authorization URL', () => {
  let system: InProcessSystem;
  let as: TestOAuthServer;
  let upstream: TestMcpServer;
  let nc: NatsConnection;

  oauthSystemPerSuite({ serviceName: 'mcpx-agent-authorization-url' }, (o) => ({ system, as, upstream } = o));
  natsPerSuite((c) => (nc = c));

  it('a server waiting for its owner shows the AGENT signer needsOwnerAuthorization and no URL; a WRITER gets a ticket and completes it', async () => {
    const owner = new ApiClient(system.apiUrl);
    await connectOAuthServer(owner, 'guarded', upstream.url);
    const agentId = await createProjectedAgent(owner, 'runner', ['guarded'], 2);

    // The refresh token is revoked: the proxy's next call cannot be refreshed, and the registry
    // records the server auth_required (no URL on the status: nobody asked for one).
    as.provider.expireAccessTokens();
    as.provider.revokeRefreshTokens();
    const proxy = new ProxyClient(nc, makeSubjects(system.env.NATS_PREFIX));
    const err = await proxy
      .call({ account: owner.principal, agent: agentId, run: 'r1', tool: 'guarded__echo', arguments: { text: 'x' } })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect((err as WireError).code).toBe('auth_required');
    const ownerView = (await owner.act<{ servers: RedactedMcpServer[] }>('ListMcpServers')).servers.find(
      (s) => s.name === 'guarded',
    );
    expect(ownerView?.status.state).toBe('auth_required');
    expect(ownerView?.status).not.toHaveProperty('authorizationUrl');

    const agentKey = generateKeyPair();
    const writerKey = generateKeyPair();
    await owner.act('AuthorizeSigner', { principal: agentKey.principal, role: 'AGENT', agents: ['runner'] });
    await owner.act('AuthorizeSigner', { principal: writerKey.principal, role: 'WRITER' });
    const asAgent = new ApiClient(system.apiUrl, agentKey, owner.principal);
    const asWriter = new ApiClient(system.apiUrl, writerKey, owner.principal);

    const answer = await asAgent.act<{ servers: RedactedMcpServer[] }>('ListMcpServers');
    const seen = answer.servers.find((s) => s.name === 'guarded');
    const status: StatusView | undefined = seen?.status;
    expect(status?.state).toBe('auth_required');
    expect(status?.needsOwnerAuthorization).toBe(true);
    expect(status).not.toHaveProperty('authorizationUrl');
    // Nowhere in the answer: no ticket, not the authorization server.
    const text = JSON.stringify(answer);
    expect(text).not.toContain('/v1/oauth/start');
    expect(text).not.toContain(new URL(as.issuer).origin);

    const writerView = (await asWriter.act<{ servers: RedactedMcpServer[] }>('ListMcpServers')).servers.find(
      (s) => s.name === 'guarded',
    );
    expect(writerView?.status.state).toBe('auth_required');
    expect((writerView?.status as StatusView).needsOwnerAuthorization).toBeUndefined();
    // The AGENT cannot ask for a ticket, by any action that hands one out.
    for (const [type, action] of [
      ['AuthorizeMcpServer', { name: 'guarded' }],
      ['RefreshMcpServer', { name: 'guarded' }],
      ['SetMcpServer', { name: 'guarded', config: { url: upstream.url, auth: 'oauth' } }],
    ] as const) {
      await expect(asAgent.act(type, action)).rejects.toMatchObject({
        code: 'forbidden',
        details: { field: 'signer' },
      });
    }

    // A WRITER asks for a ticket and completes it in its browser: the server is back, and the AGENT's view has nothing to hide.
    const ticket = await asWriter.act<{ authorizationUrl: string }>('AuthorizeMcpServer', { name: 'guarded' });
    expect(ticket.authorizationUrl.startsWith(`${system.apiUrl}/v1/oauth/start?ticket=`)).toBe(true);
    expect((await new TestBrowser().open(ticket.authorizationUrl)).text).toContain('Connected to guarded');
    const back = (await asAgent.act<{ servers: RedactedMcpServer[] }>('ListMcpServers')).servers.find(
      (s) => s.name === 'guarded',
    );
    expect(back?.status.state).toBe('ok');
    expect((back?.status as StatusView).needsOwnerAuthorization).toBeUndefined();
  });
});
