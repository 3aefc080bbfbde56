import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { echoTool, startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { RegistryHarness } from '../support/registry-harness.js';
import { firstProjectedToolNames } from '../support/fixtures/agents.js';

/**
 * A remote server whose tool carries the key `__proto__` (in its input schema): the wire refuses
 * that key everywhere (strict CBOR and JSON bodies), so the tool is not projected and the status
 * names it and why; the server's other tools reach the agent and the projector goes on.
 */
describe('a tool carrying a "__proto__" key', () => {
  let h: RegistryHarness;
  let remote: TestMcpServer;
  beforeAll(async () => {
    h = await RegistryHarness.start({ projector: true });
    const poisoned = {
      name: 'poisoned',
      description: 'a schema with a __proto__ property',
      inputSchema: JSON.parse(
        '{"type":"object","properties":{"__proto__":{"type":"string"},"x":{"type":"string"}}}',
      ) as Record<string, unknown>,
      handler: () => ({ content: [{ type: 'text' as const, text: 'ran' }] }),
    };
    remote = await startTestMcpServer({ era: 'modern', tools: [echoTool(), poisoned] });
  });
  afterAll(async () => {
    await h?.stop();
    await remote?.close();
  });

  it('is skipped with its reason; the other tools are projected onto the agent', async () => {
    const api = h.api();
    const { server } = await api.act('SetMcpServer', { name: 'px', config: { url: remote.url } });
    expect(server.status.state).toBe('ok');
    expect(server.tools.map((t: { name: string }) => t.name)).toEqual(['echo']);
    expect(server.status.skippedTools).toEqual([
      expect.objectContaining({ name: 'poisoned', reason: expect.stringContaining('__proto__') }),
    ]);
    const { agent } = await api.act('CreateAgent', { name: 'px-agent', definition: { mcpServers: ['px'] } });
    expect(await firstProjectedToolNames(api, agent.id)).toEqual(['px__echo']);
  });
});
