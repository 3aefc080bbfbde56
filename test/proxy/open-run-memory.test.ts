import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { ProxySystem, spawnProxyProcess, type ProxyProcess } from '../support/proxy-system.js';
import { collectedStats, inWaves, type CollectedStats } from '../support/fixtures/proxy-heap.js';

const RUNS = 3_000;
/** Calls at once while opening runs. */
const AT_ONCE = 20;

/**
 * What an open modern run costs a proxy: its live JS heap after a full collection (the process
 * runs with --expose-gc; `/stats/collected` collects, then reads), before and after 3,000 runs
 * that each made one call and were not ended. A run keeps a small record and shares the one
 * connection; it must not pin its first call's trace context and span (it did: about 2.7 KiB a
 * run, against about 0.7 KiB now, code compiled meanwhile included). The call log is off here:
 * the calls it holds until its next write are the call log's, not the runs'. 300 runs opened
 * first compile the path a new run takes.
 */
describe('an open modern run in a proxy process', () => {
  let system: ProxySystem;
  let upstream: TestMcpServer;
  let proxy: ProxyProcess;
  const collected = (): Promise<CollectedStats> => collectedStats(proxy);

  beforeAll(async () => {
    [system, upstream] = await Promise.all([
      ProxySystem.start({
        proxies: 0,
        env: { PROXY_MAX_CONCURRENCY_PER_SERVER: '0', PROXY_RATE_PER_SERVER: '0', LOG_LEVEL: 'warn', ACTIVITY: 'off' },
      }),
      startTestMcpServer({ era: 'modern' }),
    ]);
    proxy = await spawnProxyProcess(system, {}, ['--expose-gc']);
    await system.setServer('demo', upstream.url);
    await system.createAgent('agent', ['demo'], 1);
  });

  afterAll(async () => {
    await proxy?.stop();
    await system?.stop();
    await upstream?.close();
  });

  it('holds under 1.5 KiB of live heap (about 0.7 KiB measured), sharing one connection', async () => {
    const open = async (prefix: string, n: number): Promise<void> => {
      await inWaves(n, AT_ONCE, (k) => system.call('agent', `${prefix}-${k}`, 'demo__echo', { text: 'x' }));
    };
    // Warm: every code path of a call and of a new run has run before the first reading. The
    // first call alone: runs that start together before any modern connection is open each open one.
    await system.call('agent', 'first', 'demo__echo', { text: 'x' });
    await open('warm', 300);
    const before = await collected();
    expect(before.collected).toBe(true);
    await open('open', RUNS);
    const after = await collected();
    expect(after.runs).toBe(before.runs + RUNS);
    expect(after.connections).toBe(1);
    const perRun = (after.heapUsed - before.heapUsed) / RUNS;
    expect(perRun, `${perRun.toFixed(0)} bytes of live heap per open run`).toBeLessThan(1536);
  }, 120_000);
});
