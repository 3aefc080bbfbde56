import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RedactedMcpServer } from '@mcpx/contracts';
import type { TestMcpServer, TestOAuthServer } from '../servers/index.js';
import { ApiClient } from '../support/api-client.js';
import { serviceUrls } from '../support/env.js';
import { TestBrowser } from '../support/oauth-browser.js';
import { eventually, type InProcessSystem } from '../support/system.js';
import { oauthSystemPerSuite } from '../support/fixtures/suites.js';

/**
 * The callback's code exchange takes the server's OAuth lock, the one refreshes run under: while a
 * refresh holds it (here: another instance, as the lock in Redis says), the exchange waits, so a
 * refresh can never write its tokens over the ones the owner just authorized.
 */
describe('the code exchange waits for a refresh in flight', () => {
  let system: InProcessSystem;
  let as: TestOAuthServer;
  let upstream: TestMcpServer;
  let redis: Redis;

  oauthSystemPerSuite({ serviceName: 'mcpx-oauth-lock' }, (o) => ({ system, as, upstream } = o));

  beforeAll(async () => {
    redis = new Redis(serviceUrls().redis);
  });

  afterAll(async () => {
    redis?.disconnect();
  });

  it('completes only once the lock is free', async () => {
    const api = new ApiClient(system.apiUrl);
    const set = await api.act<{ server: RedactedMcpServer; authorizationUrl: string }>('SetMcpServer', {
      name: 'locked',
      config: { url: upstream.url, auth: 'oauth' },
    });
    expect(set.server.status.state).toBe('auth_required');
    const lockKey = `${system.env.REDIS_PREFIX}lock:oauth:${api.principal}:${set.server.id}`;
    expect(await redis.set(lockKey, 'a-refresh-elsewhere', 'PX', 60_000, 'NX')).toBe('OK');

    const exchanges = as.stats.codeExchanges;
    let settled = false;
    const page = new TestBrowser().open(set.authorizationUrl).then((res) => {
      settled = true;
      return res;
    });
    // The owner approved (the authorization server issued the code), and the exchange waits.
    await eventually(async () => (as.stats.authorizations > 0 ? true : undefined), 15_000, 'the authorization');
    await new Promise((r) => setTimeout(r, 800));
    expect(settled).toBe(false);
    expect(as.stats.codeExchanges).toBe(exchanges);

    await redis.del(lockKey);
    const done = await page;
    expect(done.status).toBe(200);
    expect(done.text).toContain('Connected to locked');
    expect(as.stats.codeExchanges).toBe(exchanges + 1);
    const listed = (await api.act<{ servers: RedactedMcpServer[] }>('ListMcpServers')).servers.find(
      (s) => s.name === 'locked',
    );
    expect(listed?.status.state).toBe('ok');
  });
});
