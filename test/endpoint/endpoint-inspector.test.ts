import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INSPECTORS, lastJson, runInspector as run } from './inspector-clis.js';
import { startEverythingServer, type EverythingServer } from '../servers/everything.js';
import { startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { startEndpointSystem, type EndpointSystem } from './endpoint-harness.js';

/**
 * The MCP Inspector's command-line clients of both generations list the agent's tools through its
 * endpoint and call `everything__echo`, with server-everything and a modern test server behind it.
 */
describe('the agent MCP endpoint through the MCP Inspector command-line clients', () => {
  let sys: EndpointSystem;
  let everything: EverythingServer;
  let modern: TestMcpServer;
  let agentId: string;
  let token: string;

  beforeAll(async () => {
    [sys, everything, modern] = await Promise.all([startEndpointSystem(), startEverythingServer('streamableHttp'), startTestMcpServer({ era: 'modern' })]);
    await sys.system.setServer('everything', everything.url);
    await sys.system.setServer('demo', modern.url);
    agentId = await sys.system.createAgent('inspected', ['everything', 'demo'], 15);
    ({ token } = await sys.token('inspected'));
  }, 120_000);

  afterAll(async () => {
    await sys?.stop();
    await Promise.all([everything?.close(), modern?.close()]);
  });

  it.each(Object.keys(INSPECTORS) as Array<keyof typeof INSPECTORS>)(
    '%s lists the tools and calls everything__echo',
    async (which) => {
      const { bin, mode } = INSPECTORS[which];
      const common = [...mode, sys.urlOf(agentId), '--transport', 'http', '--header', `Authorization: Bearer ${token}`];
      const list = await run(bin, [...common, '--method', 'tools/list']);
      expect(list.code, list.stderr).toBe(0);
      const names: string[] = lastJson(list.stdout).tools.map((t: { name: string }) => t.name);
      expect(names.filter((n) => n.startsWith('everything__')).length).toBe(16);
      expect(names).toContain('demo__echo');
      const call = await run(bin, [...common, '--method', 'tools/call', '--tool-name', 'everything__echo', '--tool-arg', 'message=hi from the inspector']);
      expect(call.code, call.stderr).toBe(0);
      expect(lastJson(call.stdout).content).toEqual([{ type: 'text', text: 'Echo: hi from the inspector' }]);
    },
    120_000,
  );
});
