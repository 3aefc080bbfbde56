import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { startTestMcpServer, type TestMcpServer, type TestTool } from '../servers/index.js';
import { ProxySystem } from '../support/proxy-system.js';
import { failure, pendingInputs } from './input-system.js';

/** A raw `input_required` result as a hostile modern server sends it (typed as a result for the test server). */
const asking = (name: string, body: Record<string, unknown>): TestTool => ({ name, handler: () => ({ resultType: 'input_required', ...body }) as unknown as CallToolResult });

/**
 * A modern server that asks questions the connector cannot show (a nested form, a javascript: URL,
 * a flood of questions, a round with only state forever): each call fails with a typed error
 * naming the server, nothing is recorded for a person, and the proxy goes on serving.
 */
describe('hostile input requests', () => {
  let system: ProxySystem;
  let upstream: TestMcpServer;
  let stateOnlyCalls = 0;

  beforeAll(async () => {
    const form = (message: string) => ({ method: 'elicitation/create', params: { mode: 'form', message, requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } } } } });
    [system, upstream] = await Promise.all([
      ProxySystem.start(),
      startTestMcpServer({
        era: 'modern',
        tools: [
          asking('nested', {
            inputRequests: {
              q: {
                method: 'elicitation/create',
                params: { mode: 'form', message: 'Address?', requestedSchema: { type: 'object', properties: { address: { type: 'object', properties: { street: { type: 'string' } } } } } },
              },
            },
          }),
          asking('script_url', { inputRequests: { q: { method: 'elicitation/create', params: { mode: 'url', message: 'Click', url: 'javascript:alert(1)', elicitationId: 'e1' } } } }),
          asking('flood', { inputRequests: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`q${i}`, form(`question ${i}`)])) }),
          {
            name: 'state_only',
            handler: () => {
              stateOnlyCalls += 1;
              return { resultType: 'input_required', requestState: `s${stateOnlyCalls}` } as unknown as CallToolResult;
            },
          },
          asking('long_message', { inputRequests: { q: form('x'.repeat(100_000)) } }),
          { name: 'echo', handler: () => ({ content: [{ type: 'text', text: 'still here' }] }) },
        ],
      }),
    ]);
    await system.setServer('bad', upstream.url);
    await system.createAgent('victim', ['bad'], 6);
  });

  afterAll(async () => {
    await system?.stop();
    await upstream?.close();
  });

  it('questions that cannot be shown fail the call with a typed error naming the server; nothing waits for a person', async () => {
    for (const tool of ['nested', 'script_url', 'flood']) {
      const err = await failure(system.call('victim', `h-${tool}`, `bad__${tool}`, {}));
      expect(err.code, `${tool}: ${err.message}`).toBe('server_error');
      expect(err.details).toMatchObject({ server: 'bad', reason: 'invalid_input_request' });
    }
    expect(await pendingInputs(system)).toEqual([]);

    // A round with only state is sent straight back, a bounded number of times.
    const loop = await failure(system.call('victim', 'h-state', 'bad__state_only', {}));
    expect(loop.code).toBe('server_error');
    expect(loop.message).toContain('no question');
    expect(stateOnlyCalls).toBe(9);

    // A huge message is cut, not refused.
    const cut = await failure(system.call('victim', 'h-long', 'bad__long_message', {}));
    expect(cut.code).toBe('input_required');
    const listed = await pendingInputs(system);
    expect(listed).toHaveLength(1);
    expect((listed[0]!.requests[0] as { message: string }).message).toHaveLength(2_000);

    const ok = await system.call('victim', 'h-echo', 'bad__echo', {});
    expect(ok.result.text).toBe('still here');

    // Counted: the refusals and the question asked, on the proxy's /metrics.
    const metrics = await (await fetch(`${system.proxies[0]!.internalUrl}/metrics`)).text();
    expect(metrics).toMatch(/mcpx_proxy_input_requests_total\{[^}]*outcome="asked"[^}]*\} [1-9]/);
  });
});
