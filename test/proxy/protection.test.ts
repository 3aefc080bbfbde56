import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { echoTool, slowTool, startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { ProxySystem } from '../support/proxy-system.js';
import { eventually } from '../support/system.js';
import { metricsText } from '../support/metrics-text.js';

describe.each(['modern', 'legacy'] as const)(
  'per-server protection shared across instances (Redis), a %s server',
  (era) => {
    let system: ProxySystem;
    let slow: TestMcpServer;
    let fast: TestMcpServer;

    beforeAll(async () => {
      [system, slow, fast] = await Promise.all([
        ProxySystem.start({ proxies: 2, env: { PROXY_MAX_CONCURRENCY_PER_SERVER: '2', PROXY_RATE_PER_SERVER: '5' } }),
        startTestMcpServer({ era, tools: [slowTool(20_000)] }),
        startTestMcpServer({ era, tools: [echoTool()] }),
      ]);
      await system.setServer('slowsrv', slow.url);
      await system.setServer('fast', fast.url);
      await system.createAgent('agent', ['slowsrv', 'fast'], 2);
    });

    afterAll(async () => {
      await system?.stop();
      await Promise.all([slow?.close(), fast?.close()]);
    });

    const [p0, p1] = [0, 1];
    const stick = (run: string, i: number): void => system.client.stick(run, system.proxies[i]!.instance);

    it('caps calls in flight per (account, server) across two instances with a typed rate_limited', async () => {
      stick('a', p0);
      stick('b', p1);
      stick('c', p1);
      const calls = slow.stats.calls;
      const first = system.callError('agent', 'a', 'slowsrv__slow', {}, { callId: 'a1' });
      const second = system.callError('agent', 'b', 'slowsrv__slow', {}, { callId: 'b1' });
      await eventually(async () => (slow.stats.calls - calls === 2 ? true : undefined), 30_000, 'two calls in flight');
      const third = await system.callError('agent', 'c', 'slowsrv__slow');
      expect(third.code).toBe('rate_limited');
      expect(third.details).toMatchObject({ server: 'slowsrv', reason: 'concurrency' });
      expect(third.details.retryAfterMs).toBeGreaterThan(0);
      expect(third.retryable).toBe(true);
      await system.client.cancel(system.account, 'a', 'a1');
      await system.client.cancel(system.account, 'b', 'b1');
      expect((await first).code).toBe('cancelled');
      expect((await second).code).toBe('cancelled');
      // The leases are released: the server takes calls again.
      const again = system.callError('agent', 'c', 'slowsrv__slow', {}, { callId: 'c1' });
      await eventually(
        async () => (slow.stats.calls - calls === 3 ? true : undefined),
        30_000,
        'the next call admitted',
      );
      await system.client.cancel(system.account, 'c', 'c1');
      expect((await again).code).toBe('cancelled');
    });

    it('limits the call rate per (account, server) across two instances, with a retry hint', async () => {
      stick('x', p0);
      stick('y', p1);
      const outcomes: Array<{ ok: boolean; instance?: string; retryAfterMs?: number }> = [];
      const started = Date.now();
      for (let i = 0; i < 12; i++) {
        const run = i % 2 === 0 ? 'x' : 'y';
        try {
          const r = await system.call('agent', run, 'fast__echo', { text: String(i) });
          outcomes.push({ ok: true, instance: r.instance });
        } catch (err) {
          const e = err as { code: string; details: { retryAfterMs: number; reason: string } };
          expect(e.code).toBe('rate_limited');
          expect(e.details.reason).toBe('rate');
          outcomes.push({ ok: false, retryAfterMs: e.details.retryAfterMs });
        }
      }
      const ok = outcomes.filter((o) => o.ok);
      // A bucket of 5 shared by both instances, plus what refilled (5 per second) while the calls
      // ran: on a busy machine the twelve calls take longer, so more are refilled, never more than that.
      const refilled = Math.ceil(((Date.now() - started) / 1000) * 5);
      expect(ok.length).toBeGreaterThanOrEqual(5);
      expect(ok.length).toBeLessThanOrEqual(Math.min(12, 5 + refilled));
      expect(new Set(ok.map((o) => o.instance)).size).toBe(2);
      const hints = outcomes.filter((o) => !o.ok).map((o) => o.retryAfterMs!);
      for (const hint of hints) {
        expect(hint).toBeGreaterThan(0);
        expect(hint).toBeLessThanOrEqual(200);
      }
      // A refusal's hint is the bucket as it is at that moment (a call admitted after a refusal takes
      // the refilled token the earlier hint pointed to): once the latest hint has passed, a call is admitted.
      const later = await system
        .call('agent', 'x', 'fast__echo', { text: 'later' })
        .catch((e: { code: string; details: { retryAfterMs: number } }) => e);
      if ('code' in later) {
        expect(later.code).toBe('rate_limited');
        expect(later.details.retryAfterMs).toBeLessThanOrEqual(200);
        await new Promise((r) => setTimeout(r, later.details.retryAfterMs + 50));
        expect((await system.call('agent', 'x', 'fast__echo', { text: 'later' })).result.text).toBe('echo: later');
      } else {
        expect(later.result.text).toBe('echo: later');
      }
    });

    it('the refusals above are counted: by kind in mcpx_quota_rejections_total, by code and server in mcpx_call_errors_total', async () => {
      // The proxies' own Prometheus exposition (the telemetry they were started with).
      const text = await metricsText(system.telemetry);
      const value = (re: RegExp): number => Number(re.exec(text)?.[1] ?? 0);
      expect(
        value(/^mcpx_quota_rejections_total\{[^}]*kind="call_concurrency_per_server"[^}]*\} (\d+)/m),
      ).toBeGreaterThanOrEqual(1);
      expect(
        value(/^mcpx_quota_rejections_total\{[^}]*kind="call_rate_per_server"[^}]*\} (\d+)/m),
      ).toBeGreaterThanOrEqual(1);
      expect(
        value(/^mcpx_call_errors_total\{[^}]*code="rate_limited"[^}]*mcpx_server="fast"[^}]*\} (\d+)/m),
      ).toBeGreaterThanOrEqual(1);
      expect(
        value(/^mcpx_call_duration_ms_count\{[^}]*mcpx_server="slowsrv"[^}]*outcome="lost"[^}]*\} (\d+)/m),
      ).toBeGreaterThanOrEqual(1);
    });
  },
);
