import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { eventually } from '../support/system.js';
import { startEndpointSystem, type EndpointSystem } from './endpoint-harness.js';

/**
 * list_changed through the endpoint: a connected client of each era hears that the agent's tool
 * set changed when its owner changes the grant, and the next tools/list shows the new set.
 */
describe('the agent MCP endpoint: list_changed when a grant changes', () => {
  let sys: EndpointSystem;
  let alpha: TestMcpServer;
  let beta: TestMcpServer;
  let token: string;

  beforeAll(async () => {
    [sys, alpha, beta] = await Promise.all([
      startEndpointSystem(),
      startTestMcpServer({ era: 'modern' }),
      startTestMcpServer(),
    ]);
    await sys.system.setServer('alpha', alpha.url);
    await sys.system.setServer('beta', beta.url);
    await sys.system.createAgent('watcher', ['alpha'], 1);
    ({ token } = await sys.token('watcher'));
  }, 120_000);

  afterAll(async () => {
    await sys?.stop();
    await Promise.all([alpha?.close(), beta?.close()]);
  });

  it('notifies an SDK v2 client on subscriptions/listen and an SDK v1 client on its GET stream', async () => {
    const headers = { authorization: `Bearer ${token}` };
    const modern = new Client({ name: 'v2-listen', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    let modernHeard = 0;
    modern.setNotificationHandler('notifications/tools/list_changed', () => {
      modernHeard++;
    });
    await modern.connect(
      new StreamableHTTPClientTransport(new URL(sys.urlOf('watcher')), { requestInit: { headers } }),
    );
    const subscription = await modern.listen({ toolsListChanged: true });

    const legacy = new V1Client({ name: 'v1-listen', version: '1.0.0' });
    let legacyHeard = 0;
    legacy.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      legacyHeard++;
    });
    await legacy.connect(new V1Transport(new URL(sys.urlOf('watcher')), { requestInit: { headers } }));
    try {
      const before = (await modern.listTools()).tools.map((t) => t.name);
      expect(before.every((n) => n.startsWith('alpha__'))).toBe(true);
      // Give the v1 client's GET stream a moment to open: it opens after the handshake, on its own.
      await eventually(async () => (await legacy.listTools()).tools.length > 0 || undefined, 10_000, 'legacy list');

      await sys.system.api.act('UpdateAgent', { agent: 'watcher', definition: { mcpServers: ['alpha', 'beta'] } });
      await eventually(
        async () => (modernHeard > 0 && legacyHeard > 0 ? true : undefined),
        20_000,
        'both clients notified',
      );
      const after = (await modern.listTools()).tools.map((t) => t.name);
      expect(after.some((n) => n.startsWith('beta__'))).toBe(true);
      const legacyAfter = (await legacy.listTools()).tools.map((t) => t.name);
      expect(legacyAfter).toEqual(after);

      // A revoked grant: notified again, and the server's tools are gone from the list.
      const [m, l] = [modernHeard, legacyHeard];
      await sys.system.api.act('UpdateAgent', { agent: 'watcher', definition: { mcpServers: ['beta'] } });
      await eventually(
        async () => (modernHeard > m && legacyHeard > l ? true : undefined),
        20_000,
        'both clients notified of the revoke',
      );
      const revoked = (await modern.listTools()).tools.map((t) => t.name);
      expect(revoked.length).toBeGreaterThan(0);
      expect(revoked.every((n) => n.startsWith('beta__'))).toBe(true);
      // And a revoked server's tool is refused, as a tool result.
      await expect(modern.callTool({ name: 'alpha__echo', arguments: { text: 'x' } })).rejects.toThrow(/Unknown tool/);
    } finally {
      await subscription.close();
      await modern.close();
      await legacy.close();
    }
  });
});
