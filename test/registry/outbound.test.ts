import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodePayload } from '@mcpx/contracts';
import { createDb } from '@mcpx/db';
import { startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { startFrontServer, type FrontServer } from '../servers/front-server.js';
import { RegistryHarness } from '../support/registry-harness.js';
import { ROOT } from '../support/system.js';

/** A row straight into mcp_servers, bypassing the API: only the CHECK constraint stands in the way. */
async function insertDirect(db: ReturnType<typeof createDb>, account: string, url: string): Promise<void> {
  await db
    .insertInto('registry.accounts')
    .values({ id: account, principal: account })
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
  await db
    .insertInto('registry.mcp_servers')
    .values({
      id: crypto.randomUUID(),
      account_id: account,
      name: `direct-${Math.random().toString(36).slice(2, 8)}`,
      url,
      config_cbor: encodePayload({ url }),
      tools_cbor: encodePayload([]),
      tools_hash: '',
      generation: 0,
      status_cbor: encodePayload({ state: 'unknown' }),
    })
    .execute();
}

describe('outbound safety, production profile', () => {
  let upstream: TestMcpServer;
  beforeAll(async () => {
    upstream = await startTestMcpServer({ era: 'modern', requireHeader: { name: 'X-Api-Key', value: 'k-123456' } });
  });
  afterAll(async () => {
    await upstream?.close();
  });

  describe('without allow-lists', () => {
    let h: RegistryHarness;
    beforeAll(async () => {
      h = await RegistryHarness.start({ env: { OUTBOUND_PROFILE: 'production' }, projector: false });
    });
    afterAll(async () => {
      await h?.stop();
    });

    it('refuses plain http in validation, writing nothing', async () => {
      const api = h.api();
      const before = await h.settledDigest();
      await expect(api.act('SetMcpServer', { name: 'plain', config: { url: upstream.url } })).rejects.toMatchObject({
        code: 'invalid_input',
        details: { field: 'config.url' },
      });
      expect(await h.tableDigest()).toEqual(before);
    });

    it('refuses plain http in the database too (the CHECK constraint), whoever writes', async () => {
      await expect(insertDirect(h.sql, 'acct-direct', 'http://example.com/mcp')).rejects.toMatchObject({
        code: '23514',
      });
      await expect(insertDirect(h.sql, 'acct-direct', 'HTTP://example.com/mcp')).rejects.toMatchObject({
        code: '23514',
      });
      await insertDirect(h.sql, 'acct-direct', 'https://example.com/mcp');
      // A connection that allows one host admits that host only.
      const allowing = createDb(h.db.url, { allowHttpHosts: ['127.0.0.1'], max: 1 });
      try {
        await insertDirect(allowing, 'acct-direct', 'http://127.0.0.1:9/mcp');
        await expect(insertDirect(allowing, 'acct-direct', 'http://example.com/mcp')).rejects.toMatchObject({
          code: '23514',
        });
        await expect(insertDirect(allowing, 'acct-direct', 'http://127.0.0.1.evil.example/mcp')).rejects.toMatchObject({
          code: '23514',
        });
      } finally {
        await allowing.destroy();
      }
    });

    it('refuses loopback, private and metadata addresses with a clear error saved on the record', async () => {
      const api = h.api();
      const loop = (
        await api.act('SetMcpServer', { name: 'loop', config: { url: `https://127.0.0.1:${upstream.port}/mcp` } })
      ).server;
      expect(loop.status.state).toBe('error');
      expect(loop.status.error).toContain('refused to connect to 127.0.0.1 (loopback address)');
      const named = (
        await api.act('SetMcpServer', { name: 'named', config: { url: `https://localhost:${upstream.port}/mcp` } })
      ).server;
      expect(named.status.error).toMatch(/refused to connect to (127\.0\.0\.1|::1) \(loopback address\) for localhost/);
      const meta = (
        await api.act('SetMcpServer', { name: 'meta', config: { url: 'https://169.254.169.254/latest/meta-data' } })
      ).server;
      expect(meta.status.error).toContain('cloud metadata');
      const priv = (await api.act('SetMcpServer', { name: 'priv', config: { url: 'https://10.1.2.3/mcp' } })).server;
      expect(priv.status.error).toContain('(private address)');
      const listed = (await api.act('ListMcpServers')).servers.map(
        (s: { name: string; status: { state: string; error: string } }) => [s.name, s.status.state],
      );
      expect(listed).toEqual([
        ['loop', 'error'],
        ['meta', 'error'],
        ['named', 'error'],
        ['priv', 'error'],
      ]);
      expect(upstream.stats.handshakes).toBe(0);
    });
  });

  describe('with 127.0.0.1 allowed (http and private)', () => {
    let h: RegistryHarness;
    let redirector: FrontServer;
    beforeAll(async () => {
      h = await RegistryHarness.start({
        env: {
          OUTBOUND_PROFILE: 'production',
          OUTBOUND_ALLOW_PRIVATE: '127.0.0.1/32',
          OUTBOUND_ALLOW_HTTP_HOSTS: '127.0.0.1',
        },
        projector: false,
      });
      redirector = await startFrontServer({ mode: 'redirect', target: upstream.url });
    });
    afterAll(async () => {
      await h?.stop();
      await redirector?.close();
    });

    it('reaches a server behind a required header', async () => {
      const api = h.api();
      const without = (await api.act('SetMcpServer', { name: 'guarded', config: { url: upstream.url } })).server;
      expect(without.status.state).toBe('error');
      expect(without.status.error).toContain('401');
      const withKey = (
        await api.act('SetMcpServer', {
          name: 'guarded',
          config: { url: upstream.url, secretHeaders: { 'X-Api-Key': 'k-123456' } },
        })
      ).server;
      expect(withKey.status).toMatchObject({ state: 'ok', transport: 'http' });
      expect(withKey.tools).toHaveLength(2);
    });

    it('still refuses http to a host that is not listed, and does not follow a redirect to another origin', async () => {
      const api = h.api();
      await expect(
        api.act('SetMcpServer', { name: 'other', config: { url: `http://localhost:${upstream.port}/mcp` } }),
      ).rejects.toMatchObject({
        details: { field: 'config.url' },
      });
      const handshakes = upstream.stats.handshakes;
      const moved = (
        await api.act('SetMcpServer', {
          name: 'moved',
          config: { url: `${redirector.origin}/mcp`, secretHeaders: { 'X-Api-Key': 'k-123456' } },
        })
      ).server;
      expect(moved.status.state).toBe('error');
      expect(moved.status.error).toMatch(/redirect/i);
      expect(upstream.stats.handshakes).toBe(handshakes);
      expect(
        (await api.act('ListMcpServers')).servers.find((s: { name: string }) => s.name === 'moved').status.error,
      ).toBe(moved.status.error);
    });
  });

  it('the production profile is the default of docker-compose.yml and deploy/; npm start runs the local one', () => {
    expect(readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8')).toMatch(/OUTBOUND_PROFILE:\s*production/);
    expect(readFileSync(join(ROOT, 'deploy', 'k8s', 'config.yaml'), 'utf8')).toMatch(/OUTBOUND_PROFILE:\s*production/);
    expect(readFileSync(join(ROOT, 'scripts', 'start.ts'), 'utf8')).toMatch(
      /OUTBOUND_PROFILE: process\.env\.OUTBOUND_PROFILE \?\? 'local'/,
    );
  });
});
