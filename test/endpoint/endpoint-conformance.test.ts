import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEverythingServer, type EverythingServer } from '../servers/everything.js';
import { startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { startTokenFront } from './conformance-front.js';
import { SERVER_SCENARIOS, runServerScenario } from './endpoint-conformance.js';
import { startEndpointSystem, type EndpointSystem } from './endpoint-harness.js';

/**
 * The official server conformance scenarios that apply to the agent endpoint, against the real
 * system with server-everything (legacy) and a modern test server behind it. The runner has no
 * header option, so a loopback front adds the agent's token (and passes Host and Origin as sent).
 * Each scenario passes, or fails exactly the checks SERVER_SCENARIOS lists with their reason.
 */
describe('MCP server conformance of the agent endpoint', () => {
  let sys: EndpointSystem;
  let everything: EverythingServer;
  let modern: TestMcpServer;
  let front: { url: string; close(): Promise<void> };
  let url: string;

  beforeAll(async () => {
    [sys, everything, modern] = await Promise.all([
      startEndpointSystem(),
      startEverythingServer('streamableHttp'),
      startTestMcpServer({ era: 'modern' }),
    ]);
    await sys.system.setServer('everything', everything.url);
    await sys.system.setServer('demo', modern.url);
    const agent = await sys.system.createAgent('conformance', ['everything', 'demo'], 15);
    const { token } = await sys.token('conformance');
    front = await startTokenFront(sys.endpoint.url, token);
    url = `${front.url}/v1/agents/${agent}/mcp`;
  }, 120_000);

  afterAll(async () => {
    await front?.close();
    await sys?.stop();
    await Promise.all([everything?.close(), modern?.close()]);
  });

  it.each(SERVER_SCENARIOS.map((s) => [`${s.scenario}${s.spec ? ` (${s.spec})` : ''}`, s] as const))(
    '%s',
    async (_name, s) => {
      const out = await runServerScenario(url, s.scenario, s.spec);
      expect(out.total, out.output.slice(-3000)).toBeGreaterThan(0);
      if (s.why !== undefined) expect(s.why).not.toBe('');
      expect(out.failing.sort(), out.output.slice(-4000)).toEqual([...(s.failing ?? [])].sort());
    },
    200_000,
  );
});
