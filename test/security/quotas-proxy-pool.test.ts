import { metrics } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WireError } from '@mcpx/contracts';
import { echoTool, startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { ConnectionPool } from '../../services/proxy/src/connection-pool.js';

/**
 * A proxy instance's caps, against a real (legacy, session-per-run) MCP server on loopback: past
 * its runs or its connections, new work is refused with a retryable rate_limited naming the limit
 * (the caller's client may route it elsewhere), nothing is opened on the server, and the work
 * the instance already holds goes on. (The pool is not on the proxy's public surface: it is
 * driven directly from its source with small caps, instead of ten thousand runs.)
 */
describe('connection pool: runs and connections per instance', () => {
  let upstream: TestMcpServer;
  beforeAll(async () => {
    upstream = await startTestMcpServer({ tools: [echoTool()] });
  });
  afterAll(async () => {
    await upstream?.close();
  });

  const entry = (): { url: string; headers: Record<string, string> } => ({ url: upstream.url, headers: {} });
  const echo = (pool: ConnectionPool, run: string): Promise<unknown> =>
    pool.use('acct', run, 'up', entry(), (c) => c.callTool({ name: 'echo', arguments: { text: run } }));
  const refusal = async (p: Promise<unknown>): Promise<WireError> => {
    const err = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    if (!(err instanceof WireError)) throw new Error(`expected a WireError, got ${String(err)}`);
    return err;
  };

  it('refuses a run past maxRuns; the runs it holds go on; an ended run frees a place', async () => {
    const pool = new ConnectionPool(
      { connectTimeoutMs: 10_000, idleMs: 60_000, maxRuns: 2, maxConnections: 0 },
      { onOpen: () => {}, onToolsChanged: () => {} },
      metrics.getMeter('test'),
    );
    try {
      await echo(pool, 'r1');
      await echo(pool, 'r2');
      const handshakes = upstream.stats.handshakes;
      const err = await refusal(echo(pool, 'r3'));
      expect(err).toMatchObject({ code: 'rate_limited', details: { limit: 'runs_per_proxy', max: 2 } });
      expect(err.retryable).toBe(true);
      expect(err.retryAfterMs).toBeGreaterThan(0);
      expect(upstream.stats.handshakes).toBe(handshakes);
      await expect(echo(pool, 'r1')).resolves.toBeDefined();
      await pool.endRun('acct', 'r1');
      await expect(echo(pool, 'r3')).resolves.toBeDefined();
      expect(pool.stats.runs).toBe(2);
    } finally {
      await pool.closeAll();
    }
  });

  it('refuses a new connection past maxConnections; open ones go on; a closed one frees a place', async () => {
    const pool = new ConnectionPool(
      { connectTimeoutMs: 10_000, idleMs: 60_000, maxRuns: 0, maxConnections: 2 },
      { onOpen: () => {}, onToolsChanged: () => {} },
      metrics.getMeter('test'),
    );
    try {
      await echo(pool, 'a');
      await echo(pool, 'b');
      const handshakes = upstream.stats.handshakes;
      const err = await refusal(echo(pool, 'c'));
      expect(err).toMatchObject({ code: 'rate_limited', details: { limit: 'connections_per_proxy', max: 2 } });
      expect(err.retryable).toBe(true);
      expect(upstream.stats.handshakes).toBe(handshakes);
      await expect(echo(pool, 'b')).resolves.toBeDefined();
      await pool.endRun('acct', 'a');
      await expect(echo(pool, 'c')).resolves.toBeDefined();
      expect(pool.stats.connections).toBe(2);
    } finally {
      await pool.closeAll();
    }
  });
});
