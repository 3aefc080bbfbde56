import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WireError } from '@mcpx/contracts';
import { INDEX_BUDGET_BYTES } from '@mcpx/domain';
import { startTestMcpServer, type TestMcpServer, type TestTool } from '../servers/index.js';
import type { ApiClient } from '../support/api-client.js';
import { RegistryHarness } from '../support/registry-harness.js';
import { eventually } from '../support/system.js';

function tools(n: number, description: (i: number) => string): TestTool[] {
  return Array.from({ length: n }, (_, i) => ({
    name: `tool_${i}`,
    description: description(i),
    inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
    handler: () => ({ content: [{ type: 'text', text: 'ok' }] }),
  }));
}

/**
 * The read side through the action API: the registry forwards ListAgentTools, PromoteTools and
 * the lambda actions to the projector over NATS. The tools come from servers of both eras (big
 * and every other wordy one are modern, the rest legacy).
 */
describe('agent tool reads through the API', () => {
  let h: RegistryHarness;
  let big: TestMcpServer;
  let small: TestMcpServer;
  let api: ApiClient;

  beforeAll(async () => {
    [h, big, small] = await Promise.all([
      RegistryHarness.start({ logSink: () => undefined }),
      startTestMcpServer({ era: 'modern', tools: tools(8, (i) => `Big tool ${i}. With more detail.`) }),
      startTestMcpServer({ tools: tools(2, (i) => `Small tool ${i}.`) }),
    ]);
    api = h.api();
    await api.act('SetMcpServer', { name: 'big', config: { url: big.url } });
    await api.act('SetMcpServer', { name: 'small', config: { url: small.url } });
    await api.act('CreateAgent', { name: 'helper', definition: { mcpServers: ['big', 'small'] } });
    await eventually(async () =>
      (await api.act('ListAgentTools', { agent: 'helper' })).tools.length === 10 ? true : undefined,
    );
  });

  afterAll(async () => {
    await Promise.allSettled([big?.close(), small?.close()]);
    await h?.stop();
  });

  it('lists documents, the collapsed index, the full listing and provider formats', async () => {
    const res = await api.act('ListAgentTools', { agent: 'helper' });
    expect(res.tools.map((t: { name: string }) => t.name)).toEqual([
      ...Array.from({ length: 8 }, (_, i) => `big__tool_${i}`),
      'small__tool_0',
      'small__tool_1',
    ]);
    expect(res.index).toBe(
      '- big__* — 8 tools from the big MCP server (read ~/tools/ to list them)\n' +
        '- small__tool_0 — Small tool 0. (small MCP)\n' +
        '- small__tool_1 — Small tool 1. (small MCP)',
    );
    expect(res.listing.split('\n').filter((l: string) => l.startsWith('big__'))).toHaveLength(8);
    expect(res.providerTools.openai).toHaveLength(10);
    expect(res.providerTools.openai[0]).toEqual({
      type: 'function',
      function: {
        name: 'big__tool_0',
        description: 'Big tool 0. With more detail.',
        parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
      },
    });
    expect(res.providerTools.anthropic[9]).toEqual({
      name: 'small__tool_1',
      description: 'Small tool 1.',
      input_schema: expect.objectContaining({ required: ['q'] }),
    });
  });

  it("promotes only enabled callable names and the agent's own enabled lambdas", async () => {
    await api.act('SetLambdaTool', {
      agent: 'helper',
      name: 'my_lambda',
      document: { description: 'Mine.', inputSchema: { type: 'object' } },
    });
    await api.act('SetLambdaTool', {
      agent: 'helper',
      name: 'off_lambda',
      document: { description: 'Off.', enabled: false },
    });
    const res = await api.act('PromoteTools', {
      agent: 'helper',
      names: ['small__tool_1', 'made_up__tool', 'my_lambda', 'off_lambda', 'small__tool_1'],
    });
    expect(res.names).toEqual(['small__tool_1', 'my_lambda']);
    expect(res.anthropic.map((t: { name: string }) => t.name)).toEqual(['small__tool_1', 'my_lambda']);
    expect(res.openai[1]).toEqual({
      type: 'function',
      function: { name: 'my_lambda', description: 'Mine.', parameters: { type: 'object' } },
    });

    const listed = await api.act('ListAgentTools', { agent: 'helper', requested: ['big__tool_3', 'nothing'] });
    expect(listed.promoted.names).toEqual(['big__tool_3']);
    expect(listed.lambdas.map((l: { name: string }) => l.name)).toEqual(['my_lambda', 'off_lambda']);
    expect(listed.providerTools.openai.map((t: { function: { name: string } }) => t.function.name)).toContain(
      'my_lambda',
    );
    expect(listed.providerTools.openai.map((t: { function: { name: string } }) => t.function.name)).not.toContain(
      'off_lambda',
    );
  });

  it('refuses lambda actions over mcp documents with a typed conflict', async () => {
    const err = await api
      .act('SetLambdaTool', { agent: 'helper', name: 'big__tool_0', document: { description: 'x' } })
      .catch((e: unknown) => e as WireError);
    expect(err).toBeInstanceOf(WireError);
    expect((err as WireError).code).toBe('conflict');
    expect((err as WireError).message).toContain('disable the big server');
    const del = await api
      .act('DeleteLambdaTool', { agent: 'helper', name: 'small__tool_0' })
      .catch((e: unknown) => e as WireError);
    expect((del as WireError).code).toBe('conflict');
    await api.act('DeleteLambdaTool', { agent: 'helper', name: 'off_lambda' });
  });

  it('keeps the index within its byte budget when servers are many and wordy', async () => {
    const wordy = await Promise.all(
      Array.from({ length: 12 }, (_, s) =>
        startTestMcpServer({
          era: s % 2 === 0 ? 'modern' : 'legacy',
          tools: tools(6, (i) => `${'Wordy '.repeat(20)}tool ${s}/${i}.`),
        }),
      ),
    );
    try {
      const names = wordy.map((_, s) => `wordy${s}`);
      for (const [s, server] of wordy.entries())
        await api.act('SetMcpServer', { name: names[s], config: { url: server.url } });
      await api.act('CreateAgent', { name: 'wordy', definition: { mcpServers: names } });
      const res = await eventually(async () => {
        const r = await api.act('ListAgentTools', { agent: 'wordy' });
        return r.tools.length === 72 ? r : undefined;
      });
      expect(Buffer.byteLength(res.index, 'utf8')).toBeLessThanOrEqual(INDEX_BUDGET_BYTES);
      expect(res.index).toMatch(/tools from the wordy\d+ MCP server/);
      expect(res.listing.split('\n').filter((l: string) => l.startsWith('wordy'))).toHaveLength(72);
    } finally {
      await Promise.allSettled(wordy.map((w) => w.close()));
    }
  });
});
