import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProxySystem } from '../support/proxy-system.js';
import { startListeningServer, type ListeningServer } from './listening-server.js';

/** A modern call whose response stream breaks after the request went out: never retried, and the code says it may have run. */
describe('maybe_executed through the proxy', () => {
  let system: ProxySystem;
  let upstream: ListeningServer;

  beforeAll(async () => {
    [system, upstream] = await Promise.all([
      ProxySystem.start({ env: { PROXY_MAX_CONCURRENCY_PER_SERVER: '0', PROXY_RATE_PER_SERVER: '0' } }),
      startListeningServer(['fine', 'cut'], { cut: 'cut' }),
    ]);
    await system.setServer('up', upstream.url);
    await system.createAgent('agent', ['up'], 2);
  });
  afterAll(async () => {
    await system?.stop();
    await upstream?.close();
  });

  it('reaches the caller as maybe_executed, sent once, and the run goes on', async () => {
    const calls = upstream.stats.calls;
    const err = await system.callError('agent', 'cut-run', 'up__cut');
    expect(err.code).toBe('maybe_executed');
    expect(err.message).toMatch(/may have run/);
    expect(err.retryable).toBe(false);
    expect(upstream.stats.calls - calls).toBe(1);
    const next = await system.call('agent', 'cut-run', 'up__fine');
    expect(next.result.text).toBe('ok');
    expect(upstream.stats.calls - calls).toBe(2);
  });
});
