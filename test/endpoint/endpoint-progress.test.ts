import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { CallProgress } from '@mcpx/contracts';
import {
  progressTool,
  startEverythingServer,
  startTestMcpServer,
  type EverythingServer,
  type TestMcpServer,
} from '../servers/index.js';
import { cliEnvFor, runCli } from '../support/cli.js';
import { serviceUrls } from '../support/env.js';
import { startEndpointSystem, type EndpointSystem } from './endpoint-harness.js';
import { metricsText, metricValue } from '../support/metrics-text.js';

type Seen = { progress: number; total?: number; message?: string };

/** The progress values of `events`, in the order they arrived. */
const values = (events: Seen[]): number[] => events.map((e) => e.progress);

/**
 * An upstream's progress reaches the caller while the call runs, through the real services: the
 * reference server-everything (`trigger-long-running-operation`, two steps) and SDK servers of
 * both eras sending `step i of n`, called by a NATS runtime (`onProgress`) and through the agent
 * endpoint by the SDK v2 client (2026-07-28) and the SDK v1 client (2025-11-25), each with its own
 * progress token. A hostile flood reaches the caller bounded (at most 10 a second, the latest
 * kept), counted as dropped in the proxy's metrics; 10,000 on one response stream end the call with
 * the outbound bound's typed error.
 */
describe('progress end to end: upstream → proxy → runtime and endpoint clients', () => {
  let sys: EndpointSystem;
  let everything: EverythingServer;
  let modern: TestMcpServer;
  let legacy: TestMcpServer;
  let token: string;

  beforeAll(async () => {
    [sys, everything, modern, legacy] = await Promise.all([
      startEndpointSystem(),
      startEverythingServer('streamableHttp'),
      startTestMcpServer({ era: 'modern', tools: [progressTool()] }),
      startTestMcpServer({ era: 'legacy', tools: [progressTool()] }),
    ]);
    await sys.system.setServer('ev', everything.url);
    await sys.system.setServer('mo', modern.url);
    await sys.system.setServer('le', legacy.url);
    await sys.system.createAgent('worker', ['ev', 'mo', 'le'], 3);
    ({ token } = await sys.token('worker'));
  }, 120_000);

  afterAll(async () => {
    await sys?.stop();
    await Promise.all([everything?.close(), modern?.close(), legacy?.close()]);
  });

  const runtimeCall = async (
    run: string,
    tool: string,
    args: Record<string, unknown>,
  ): Promise<{ text: string; events: CallProgress[] }> => {
    const events: CallProgress[] = [];
    const out = await sys.system.call('worker', run, tool, args, {
      onProgress: (p) => events.push(p),
      timeoutMs: 60_000,
    });
    return { text: out.result.text ?? '', events };
  };

  it('a NATS runtime hears server-everything’s two steps, in order, before the result', async () => {
    const { text, events } = await runtimeCall('rt-ev', 'ev__trigger-long-running-operation', {
      duration: 1,
      steps: 2,
    });
    expect(text).toContain('Long running operation completed');
    expect(events).toEqual([
      { progress: 1, total: 2 },
      { progress: 2, total: 2 },
    ]);
  }, 60_000);

  it('a NATS runtime hears a modern and a legacy server’s steps with their messages; a call without onProgress asks for none', async () => {
    for (const server of ['mo', 'le']) {
      const { text, events } = await runtimeCall(`rt-${server}`, `${server}__progress`, { steps: 4 });
      expect(text).toContain('done after 4');
      expect(events).toEqual([1, 2, 3, 4].map((i) => ({ progress: i, total: 4, message: `step ${i} of 4` })));
    }
    // No progress token went out: the server sent nothing, and the call is as before.
    expect((await sys.system.call('worker', 'rt-none', 'mo__progress', { steps: 2, gapMs: 10 })).result.text).toContain(
      'done after 2',
    );
  }, 60_000);

  it('a flood reaches the runtime bounded, in order, the last one kept, counted dropped; 10,000 on one stream end the call typed', async () => {
    // 1,900 notifications as fast as the server can: within the outbound bound of events per stream.
    for (const server of ['mo', 'le']) {
      const { text, events } = await runtimeCall(`rt-flood-${server}`, `${server}__progress`, {
        steps: 1_900,
        flood: true,
      });
      expect(text).toContain('done after 1900');
      expect(events.length).toBeGreaterThan(0);
      // Far fewer than were sent: at most 10 a second of the flood, the latest kept.
      expect(events.length).toBeLessThan(100);
      const seen = values(events);
      expect(seen).toEqual([...seen].sort((a, b) => a - b));
      expect(new Set(seen).size).toBe(seen.length);
      expect(seen.at(-1)).toBe(1_900);
    }
    const metrics = await metricsText(sys.system.telemetry);
    const count = (outcome: string): number => metricValue(metrics, 'mcpx_proxy_progress_events_total', { outcome });
    expect(count('dropped')).toBeGreaterThan(3_000);
    expect(count('relayed')).toBeGreaterThan(0);
    // 10,000 on one response stream pass the outbound bound of events per stream: a typed failure
    // that says so, nothing crashes, and the next call runs.
    for (const server of ['mo', 'le']) {
      const events: CallProgress[] = [];
      const err = await sys.system.callError(
        'worker',
        `rt-flood10k-${server}`,
        `${server}__progress`,
        { steps: 10_000, flood: true },
        { onProgress: (p) => events.push(p) },
      );
      expect(['maybe_executed', 'transport_error', 'response_too_large']).toContain(err.code);
      expect(err.message).toMatch(/maxSseEvents|too large|events/);
      expect(events.length).toBeLessThan(100);
      expect(
        (await sys.system.call('worker', `rt-after-${server}`, `${server}__progress`, { steps: 1, gapMs: 0 })).result
          .text,
      ).toContain('done after 1');
    }
  }, 120_000);

  it('an SDK v2 client (2026-07-28) gets notifications/progress for its own token, in order, from every era of server', async () => {
    const client = new Client({ name: 'progress-v2', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(sys.urlOf('worker')), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    try {
      const ev: Seen[] = [];
      const out = await client.callTool(
        { name: 'ev__trigger-long-running-operation', arguments: { duration: 1, steps: 2 } },
        { onprogress: (p) => ev.push(p), timeout: 60_000 },
      );
      expect(JSON.stringify(out)).toContain('Long running operation completed');
      expect(ev).toEqual([
        { progress: 1, total: 2 },
        { progress: 2, total: 2 },
      ]);
      for (const server of ['mo', 'le']) {
        const got: Seen[] = [];
        await client.callTool(
          { name: `${server}__progress`, arguments: { steps: 3 } },
          { onprogress: (p) => got.push(p), timeout: 60_000 },
        );
        expect(got).toEqual([1, 2, 3].map((i) => ({ progress: i, total: 3, message: `step ${i} of 3` })));
      }
    } finally {
      await client.close();
    }
  }, 90_000);

  it('an SDK v1 client (2025-11-25) gets them too, and a flood reaches it bounded', async () => {
    const client = new V1Client({ name: 'progress-v1', version: '1.0.0' });
    await client.connect(
      new V1Transport(new URL(sys.urlOf('worker')), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
    );
    try {
      const ev: Seen[] = [];
      await client.callTool(
        { name: 'ev__trigger-long-running-operation', arguments: { duration: 1, steps: 2 } },
        undefined,
        { onprogress: (p) => ev.push(p), timeout: 60_000 },
      );
      expect(values(ev)).toEqual([1, 2]);
      const got: Seen[] = [];
      await client.callTool({ name: 'le__progress', arguments: { steps: 3 } }, undefined, {
        onprogress: (p) => got.push(p),
        timeout: 60_000,
      });
      expect(got).toEqual([1, 2, 3].map((i) => ({ progress: i, total: 3, message: `step ${i} of 3` })));
      const flood: Seen[] = [];
      const out = await client.callTool({ name: 'mo__progress', arguments: { steps: 1_900, flood: true } }, undefined, {
        onprogress: (p) => flood.push(p),
        timeout: 60_000,
      });
      expect(JSON.stringify(out)).toContain('done after 1900');
      expect(flood.length).toBeGreaterThan(0);
      expect(flood.length).toBeLessThan(100);
      expect(values(flood).at(-1)).toBe(1_900);
    } finally {
      await client.close();
    }
  }, 90_000);

  it('mcpx call over NATS prints the progress lines on stderr while it waits, and none with --json', async () => {
    const { env } = cliEnvFor(sys.system.api, {
      MCPX_NATS_URL: serviceUrls().nats,
      MCPX_NATS_PREFIX: sys.system.env.NATS_PREFIX ?? '',
    });
    const shown = await runCli(['call', '--agent', 'worker', 'mo__progress', '{"steps":3,"gapMs":200}'], env);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain('done after 3');
    expect(shown.stderr.split('\n').filter((l) => l.startsWith('progress '))).toEqual([
      'progress 1/3: step 1 of 3',
      'progress 2/3: step 2 of 3',
      'progress 3/3: step 3 of 3',
    ]);
    const quiet = await runCli(['call', '--agent', 'worker', 'mo__progress', '{"steps":3,"gapMs":200}', '--json'], env);
    expect(quiet.code, quiet.stderr).toBe(0);
    expect(JSON.parse(quiet.stdout)).toMatchObject({ text: expect.stringContaining('done after 3') });
    expect(quiet.stderr).not.toContain('progress');
  }, 90_000);
});
