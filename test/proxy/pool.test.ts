import { connect as natsConnect } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodePayload, type ToolsObserved } from '@mcpx/contracts';
import {
  defaultTools,
  echoTool,
  slowTool,
  startTestMcpServer,
  type TestMcpServer,
  type TestTool,
} from '../servers/index.js';
import { serviceUrls } from '../support/env.js';
import { ProxySystem } from '../support/proxy-system.js';
import { eventually } from '../support/system.js';

/** Round trips a server spent on connects: `server/discover` probes and `initialize` handshakes. */
const connects = (s: TestMcpServer): number => s.stats.discovers + s.stats.handshakes;

/** Counts its executions and answers only when the test releases it. */
function onceTool(state: { count: number; release?: () => void }): TestTool {
  return {
    name: 'once',
    inputSchema: { type: 'object' },
    handler: async () => {
      state.count++;
      await new Promise<void>((resolve) => {
        state.release = resolve;
      });
      return { content: [{ type: 'text', text: 'done' }] };
    },
  };
}

/**
 * Against a modern (2026-07-28) server a connection is no session: it costs at most one probe per
 * proxy instance (none once the registry's verdict is read) and keeps only keep-alive sockets; a
 * legacy server's is a session per run, with a handshake.
 */
describe.each(['modern', 'legacy'] as const)(
  'proxy pool against a %s server: lazy, per run, shared connects, closed on end, idle and shutdown',
  (era) => {
    let system: ProxySystem;
    let up: TestMcpServer;
    const closers: TestMcpServer[] = [];
    let disc: TestMcpServer;
    const once = { count: 0 } as { count: number; release?: () => void };
    const upTools = (): TestTool[] => [...defaultTools(), slowTool(20_000), onceTool(once)];

    beforeAll(async () => {
      [system, up, disc] = await Promise.all([
        ProxySystem.start({
          env: { PROXY_IDLE_MS: '700', PROXY_MAX_CONCURRENCY_PER_SERVER: '0', PROXY_RATE_PER_SERVER: '0' },
        }),
        startTestMcpServer({ era, tools: upTools() }),
        startTestMcpServer({ era, tools: [echoTool()] }),
      ]);
      closers.push(...(await Promise.all([1, 2, 3].map(() => startTestMcpServer({ era, tools: [echoTool()] })))));
      await system.setServer('up', up.url);
      await system.setServer('disc', disc.url);
      for (const [i, s] of closers.entries()) await system.setServer(`c${i + 1}`, s.url);
      await system.createAgent('agent', ['up', 'disc', 'c1', 'c2', 'c3'], 8);
    });

    afterAll(async () => {
      once.release?.();
      await system?.stop();
      await Promise.all([up, disc, ...closers].map((s) => s?.close()));
    });

    it('opens nothing until the first call, and 200 concurrent calls of a run share one connect', async () => {
      const before = connects(up);
      expect(system.proxies[0]!.stats().runs).toBe(0);
      const results = await Promise.all(
        Array.from({ length: 200 }, (_, i) => system.call('agent', 'burst', 'up__echo', { text: `n${i}` })),
      );
      expect(results.map((r) => r.result.text)).toEqual(Array.from({ length: 200 }, (_, i) => `echo: n${i}`));
      // Legacy: one handshake. Modern: no handshake, and at most the one probe of this instance.
      if (era === 'legacy') expect(connects(up) - before).toBe(1);
      else {
        expect(up.stats.handshakes).toBe(0);
        expect(connects(up) - before).toBeLessThanOrEqual(1);
      }
      await system.client.endRun(system.account, 'burst');
    });

    it.runIf(era === 'legacy')(
      'closes a run on runs.ended, on the idle timeout, and everything on shutdown: no sockets left upstream',
      async () => {
        const [c1, c2, c3] = closers as [TestMcpServer, TestMcpServer, TestMcpServer];
        await system.call('agent', 'ends', 'c1__echo', { text: 'a' });
        await system.call('agent', 'idles', 'c2__echo', { text: 'b' });
        expect(c1.stats.openSockets()).toBeGreaterThan(0);
        expect(c2.stats.openSockets()).toBeGreaterThan(0);
        await system.client.endRun(system.account, 'ends');
        // No runs.ended for 'idles': the idle sweep closes it (PROXY_IDLE_MS=700).
        await Promise.all([
          eventually(
            async () => (c1.stats.openSockets() === 0 ? true : undefined),
            20_000,
            'c1 sockets to close after runs.ended',
          ),
          eventually(
            async () => (c2.stats.openSockets() === 0 ? true : undefined),
            20_000,
            'c2 sockets to close after the idle timeout',
          ),
        ]);
        // Shutdown, with a run still open on c3 in a proxy of its own.
        const extra = await system.addProxy({ PROXY_IDLE_MS: '600000' });
        system.client.stick('kept', extra.instance);
        const kept = await system.call('agent', 'kept', 'c3__echo', { text: 'c' });
        expect(kept.instance).toBe(extra.instance);
        expect(c3.stats.openSockets()).toBeGreaterThan(0);
        expect(extra.stats().connections).toBe(1);
        await extra.stop();
        await eventually(
          async () => (c3.stats.openSockets() === 0 ? true : undefined),
          10_000,
          'c3 sockets to close on shutdown',
        );
      },
    );

    it('closes a run on runs.ended and on the idle timeout, and a run goes on after its end with no handshake', async () => {
      await system.call('agent', 'ends', 'c1__echo', { text: 'a' });
      await system.call('agent', 'idles', 'c2__echo', { text: 'b' });
      const runs = system.proxies[0]!.stats().runs;
      expect(runs).toBeGreaterThanOrEqual(2);
      await system.client.endRun(system.account, 'ends');
      await eventually(
        async () => (system.proxies[0]!.stats().runs <= runs - 2 ? true : undefined),
        20_000,
        'both runs to close (end and idle)',
      );
      const c1 = closers[0]!;
      const handshakes = c1.stats.handshakes;
      expect((await system.call('agent', 'ends', 'c1__echo', { text: 'again' })).result.text).toBe('echo: again');
      expect(c1.stats.handshakes - handshakes).toBe(era === 'legacy' ? 1 : 0);
      await system.client.endRun(system.account, 'ends');
    });

    it('recovers a server restarted mid-run with one fresh handshake and one retry', async () => {
      const first = await system.call('agent', 'restart', 'up__echo', { text: 'before' });
      expect(first.result.text).toBe('echo: before');
      const port = up.port;
      await up.close();
      up = await startTestMcpServer({ era, tools: upTools(), port });
      const again = await system.call('agent', 'restart', 'up__echo', { text: 'after' });
      expect(again.result.text).toBe('echo: after');
      // Legacy: the old session's 404 was answered by a new handshake and exactly one executed retry.
      // Modern: there was no session to lose; the call simply went to the new process.
      expect(up.stats.handshakes).toBe(era === 'legacy' ? 1 : 0);
      expect(up.stats.calls).toBe(1);
    });

    it('never retries a call that may have executed: a connection dropped mid-call is an error, run once', async () => {
      once.count = 0;
      const pending = system.callError('agent', 'drop', 'up__once');
      await eventually(async () => (once.count === 1 ? true : undefined), 10_000, 'the call to reach the server');
      const port = up.port;
      await up.close();
      up = await startTestMcpServer({ era, tools: upTools(), port });
      const err = await pending;
      // Legacy: maybe_executed that says so. Modern: the SDK server's close aborts the exchange
      // (an HTTP error after the request went out), or the response stream breaks (maybe_executed,
      // test/eras/maybe-executed.test.ts): either way an error, never a retry, and never a
      // retryable code for a call that may have run.
      if (era === 'legacy') {
        expect(err.code).toBe('maybe_executed');
        expect(err.message).toMatch(/may have executed/);
      } else expect(['transport_error', 'maybe_executed']).toContain(err.code);
      if (err.code === 'maybe_executed') expect(err.retryable).toBe(false);
      expect(once.count).toBe(1);
      expect(up.stats.calls).toBe(0);
      // The run goes on: its next call reconnects.
      const next = await system.call('agent', 'drop', 'up__echo', { text: 'next' });
      expect(next.result.text).toBe('echo: next');
    });

    it('times a slow tool out with the per-call timeoutMs, and cancels an in-flight call on mcp.proxy.cancel', async () => {
      const timedOut = await system.callError('agent', 'slow', 'up__slow', {}, { timeoutMs: 300 });
      expect(timedOut.code).toBe('timeout');

      const calls = up.stats.calls;
      const pending = system.callError('agent', 'slow', 'up__slow', {}, { callId: 'cancel-me' });
      await eventually(async () => (up.stats.calls > calls ? true : undefined), 10_000, 'the slow call to start');
      await system.client.cancel(system.account, 'slow', 'cancel-me');
      const cancelled = await pending;
      expect(cancelled.code).toBe('cancelled');
      expect(system.proxies[0]!.stats().inflight).toBe(0);
    });

    it('publishes a quiet discovery when a connection opens and when the server says its tools changed', async () => {
      const nc = await natsConnect({ servers: serviceUrls().nats });
      const seen: ToolsObserved[] = [];
      nc.subscribe(system.subjects.toolsObserved, {
        callback: (_e, m) => void seen.push(decodePayload<ToolsObserved>(m.data)),
      });
      await nc.flush();
      try {
        await system.call('agent', 'disc-run', 'disc__echo', { text: 'x' });
        const opened = await eventually(
          async () => seen.find((o) => o.server === 'disc'),
          10_000,
          'quiet discovery on open',
        );
        expect(opened).toMatchObject({ account: system.account, server: 'disc', transport: 'http' });
        expect(opened.tools.map((t) => t.name)).toEqual(['echo']);

        // A modern server's change stream is the registry's (subscriptions/listen), not the pool's.
        if (era === 'modern') return;
        disc.setTools([echoTool(), { ...echoTool(), name: 'shout' }]);
        const changed = await eventually(
          async () => seen.find((o) => o.server === 'disc' && o.tools.some((t) => t.name === 'shout')),
          10_000,
          'quiet discovery on tools/list_changed',
        );
        expect(changed.tools.map((t) => t.name).sort()).toEqual(['echo', 'shout']);
      } finally {
        await nc.drain();
      }
    });
  },
);
