/**
 * Attack: an AGENT signer (an agent runtime's key, the model's side) reads the account's servers
 * to find the authorization URL of a server waiting for its owner, and opens it to complete the
 * owner's OAuth (issue 11, "Why" 5 and Deliver 7). The URL is recorded on the server's status
 * after a refused refresh; the AGENT's view must not hold it, and says the owner must authorize.
 */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeSubjects, type RedactedMcpServer, type WireError } from '@mcpx/contracts';
import { generateKeyPair } from '@mcpx/envelope';
import { ProxyClient } from '@mcpx/proxy-client';
import type { TestMcpServer, TestOAuthServer } from '../servers/index.js';
import { ApiClient } from '../support/api-client.js';
import { serviceUrls } from '../support/env.js';
import { OAuthSystem } from '../support/oauth-system.js';
import { eventually, type InProcessSystem } from '../support/system.js';

type StatusView = RedactedMcpServer['status'] & { needsOwnerAuthorization?: boolean };

describe('AGENT signers never see an authorization URL', () => {
  let oauth: OAuthSystem;
  let system: InProcessSystem;
  let as: TestOAuthServer;
  let upstream: TestMcpServer;
  let nc: NatsConnection;

  beforeAll(async () => {
    oauth = await OAuthSystem.start({ serviceName: 'mcpx-agent-authorization-url' });
    ({ system, as, upstream } = oauth);
    nc = await connect({ servers: serviceUrls().nats });
  });
  afterAll(async () => {
    await nc?.drain();
    await oauth?.stop();
  });

  it('a server waiting for its owner shows the AGENT signer needsOwnerAuthorization and no URL; the owner and a WRITER keep the URL', async () => {
    const owner = new ApiClient(system.apiUrl);
    const set = await owner.act('SetMcpServer', { name: 'guarded', config: { url: upstream.url, auth: 'oauth' } });
    expect(await (await fetch(set.authorizationUrl, { redirect: 'follow' })).text()).toContain('Connected to guarded');
    const { agent } = await owner.act('CreateAgent', { name: 'runner', definition: { mcpServers: ['guarded'] } });
    await eventually(async () => ((await owner.act('ListAgentTools', { agent: agent.id })).tools.length === 2 ? true : undefined), 15_000, 'tools');

    // The refresh token is revoked: the proxy's next call cannot be refreshed, and the registry
    // records the server auth_required with a fresh URL for the owner.
    as.provider.expireAccessTokens();
    as.provider.revokeRefreshTokens();
    const proxy = new ProxyClient(nc, makeSubjects(system.env.NATS_PREFIX));
    const err = await proxy.call({ account: owner.principal, agent: agent.id, run: 'r1', tool: 'guarded__echo', arguments: { text: 'x' } }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((err as WireError).code).toBe('auth_required');
    const ownerView = (await owner.act<{ servers: RedactedMcpServer[] }>('ListMcpServers')).servers.find((s) => s.name === 'guarded');
    const url = String(ownerView?.status.authorizationUrl);
    expect(new URL(url).origin + '/').toBe(as.issuer);

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
    // Nowhere in the answer: not the URL, not its state parameter, not the authorization server.
    const text = JSON.stringify(answer);
    expect(text).not.toContain(url);
    expect(text).not.toContain(new URL(url).searchParams.get('state') ?? 'no state');
    expect(text).not.toContain(new URL(url).origin);

    // Those who may authorize still find it.
    const writerView = (await asWriter.act<{ servers: RedactedMcpServer[] }>('ListMcpServers')).servers.find((s) => s.name === 'guarded');
    expect(writerView?.status.authorizationUrl).toBe(url);
    expect((writerView?.status as StatusView).needsOwnerAuthorization).toBeUndefined();
    // And the AGENT cannot ask for a fresh one either.
    await expect(asAgent.act('AuthorizeMcpServer', { name: 'guarded' })).rejects.toMatchObject({ code: 'forbidden', details: { field: 'signer' } });

    // The owner opens the recorded URL: the server is back, and the AGENT's view has nothing to hide.
    expect(await (await fetch(url, { redirect: 'follow' })).text()).toContain('Connected to guarded');
    const back = (await asAgent.act<{ servers: RedactedMcpServer[] }>('ListMcpServers')).servers.find((s) => s.name === 'guarded');
    expect(back?.status.state).toBe('ok');
    expect((back?.status as StatusView).needsOwnerAuthorization).toBeUndefined();
  });
});
