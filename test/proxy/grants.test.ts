import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { ProxySystem } from '../support/proxy-system.js';
import { eventually } from '../support/system.js';

describe.each(['modern', 'dual', 'legacy'] as const)(
  'grants on the hot path against a %s server: the cache that agent events invalidate',
  (era) => {
    let system: ProxySystem;
    let upstream: TestMcpServer;

    beforeAll(async () => {
      [system, upstream] = await Promise.all([ProxySystem.start(), startTestMcpServer({ era })]);
      await system.setServer('demo', upstream.url);
      await system.setServer('other', upstream.url);
      await system.createAgent('agent', ['demo', 'other'], 4);
    });

    afterAll(async () => {
      await system?.stop();
      await upstream?.close();
    });

    it('stops calls of a revoked server within one event, mid-run', async () => {
      const proxy = system.proxies[0]!;
      for (let i = 0; i < 3; i++) {
        expect((await system.call('agent', 'run', 'demo__echo', { text: `before ${i}` })).result.text).toBe(
          `echo: before ${i}`,
        );
      }
      const seen = proxy.stats().invalidations;
      await system.api.act('UpdateAgent', { agent: system.agentId('agent'), definition: { mcpServers: ['other'] } });
      // The first invalidating event (agent-changed) is enough: the grant is re-read from its owner.
      await eventually(async () => (proxy.stats().invalidations > seen ? true : undefined), 10_000, 'the revoke event');
      const err = await system.callError('agent', 'run', 'demo__echo', { text: 'after' });
      expect(['not_granted', 'not_found']).toContain(err.code);
      // The server still granted keeps working in the same run.
      expect((await system.call('agent', 'run', 'other__echo', { text: 'still' })).result.text).toBe('echo: still');
      // Once the projection caught up too, the tool is simply gone.
      await eventually(
        async () => {
          const e = await system.callError('agent', 'run', 'demo__echo', { text: 'later' });
          return e.code === 'not_found' ? true : undefined;
        },
        15_000,
        'the projection to drop the tool',
      );
    });

    it("refuses a call naming another account's agent: nothing crosses accounts", async () => {
      const err = await system.client
        .call({
          account: 'someone-else',
          agent: system.agentId('agent'),
          run: 'x',
          tool: 'other__echo',
          arguments: { text: 'hi' },
        })
        .then(
          () => undefined,
          (e: { code: string; message: string; details: Record<string, unknown> }) => e,
        );
      expect(err?.code).toBe('not_found');
      // Said as it is: the account has no such agent (not "no tool enabled"), and which field.
      expect(err?.message).toBe('this account has no such agent');
      expect(err?.details.field).toBe('agent');
    });
  },
);
