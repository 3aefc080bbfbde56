import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/client';
import type { TestMcpServer } from '../servers/index.js';
import { connectAgentClient, errorOf, startEndpointApprovalSystem, type EndpointSystem } from './endpoint-harness.js';

/**
 * The per-server rate limit through the endpoint: a call over it is a tool result with
 * `rate_limited` and the delay, not a transport failure. One call every two seconds is allowed, so
 * that even a slow, loaded machine sends the burst faster than it refills.
 */
describe('the agent MCP endpoint: limits are tool results', () => {
  let sys: EndpointSystem;
  let upstream: TestMcpServer;
  let client: Client;

  beforeAll(async () => {
    ({ sys, upstream } = await startEndpointApprovalSystem({ env: { PROXY_RATE_PER_SERVER: '0.5' } }));
    client = await connectAgentClient(sys, 'ops', 'limits');
  }, 120_000);

  afterAll(async () => {
    await client?.close().catch(() => undefined);
    await sys?.stop();
    await upstream?.close();
  });

  it('says the per-server rate limit as rate_limited with the delay', async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => client.callTool({ name: 'db__add', arguments: { a: i, b: 1 } })),
    );
    const limited = results.filter((r) => r.isError === true);
    expect(limited.length).toBeGreaterThan(0);
    const err = errorOf(limited[0]!);
    expect(err.code).toBe('rate_limited');
    expect(typeof err.details.retryAfterMs).toBe('number');
    expect((limited[0]!.content as Array<{ text: string }>)[0]!.text).toMatch(/Retry after \d+ s/);
    expect(results.some((r) => r.isError !== true)).toBe(true);
  });
});
