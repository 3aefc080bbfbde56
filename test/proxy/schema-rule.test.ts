import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { ApprovalView } from '@mcpx/contracts';
import {
  chainTool,
  deepArguments,
  deepSchema,
  deepSchemaTool,
  echoTool,
  screenshotTool,
  startTestMcpServer,
  type TestMcpServer,
} from '../servers/index.js';
import { startEndpointSystem, type EndpointSystem } from '../endpoint/endpoint-harness.js';
import { metricsText, metricValue } from '../support/metrics-text.js';

type Listed = { name: string; inputSchema?: Record<string, unknown> };
type ErrorMeta = { code: string; message: string };

/** The screenshot tool's schema as a document keeps it: whole, less the root's `$schema`. */
function keptScreenshotSchema(): Record<string, unknown> {
  const { $schema: _dropped, ...kept } = screenshotTool().inputSchema!;
  return kept;
}

/**
 * The seed's schema rule through the real services: a real loopback server, discovered by the
 * registry, projected, and called through the proxy and the agent endpoint. No tool is dropped for
 * its schema's depth; a required property with a default that the caller leaves out reaches the
 * server filled; a real invalid argument is still refused naming the field, calling nothing.
 */
describe('the schema rule: tools the server accepts are accepted', () => {
  let sys: EndpointSystem;
  let upstream: TestMcpServer;

  beforeAll(async () => {
    const tools = [
      screenshotTool(),
      screenshotTool('screenshot_ask', { destructiveHint: true }),
      deepSchemaTool(40),
      chainTool('chain', 100),
      echoTool(),
    ];
    [sys, upstream] = await Promise.all([startEndpointSystem(), startTestMcpServer({ era: 'dual', tools })]);
    await sys.system.setServer('web', upstream.url);
    await sys.system.createAgent('browser', ['web'], tools.length);
  }, 120_000);

  afterAll(async () => {
    await sys?.stop();
    await upstream?.close();
  });

  const text = (out: { result: { text?: string } }): string => out.result.text ?? '';

  it('discovers and projects every tool: the 40-deep schema is kept whole, nothing is skipped', async () => {
    const { servers } = await sys.system.api.act<{
      servers: { name: string; status: { state: string; skippedTools?: unknown[] } }[];
    }>('ListMcpServers', {});
    const web = servers.find((s) => s.name === 'web');
    expect(web?.status.state).toBe('ok');
    expect(web?.status.skippedTools).toBeUndefined();
    const { tools } = await sys.system.api.act<{ tools: Listed[] }>('ListAgentTools', {
      agent: sys.system.agentId('browser'),
    });
    expect(tools.map((t) => t.name).sort()).toEqual([
      'web__chain',
      'web__deep',
      'web__echo',
      'web__screenshot_ask',
      'web__take_screenshot',
    ]);
    expect(tools.find((t) => t.name === 'web__deep')?.inputSchema).toEqual(deepSchema(40));
    expect(tools.find((t) => t.name === 'web__take_screenshot')?.inputSchema).toEqual(keptScreenshotSchema());
  });

  it('fills a required property with a default that the call leaves out, and sends the filled arguments (proxy)', async () => {
    const before = upstream.stats.calls;
    expect(text(await sys.system.call('browser', 'r1', 'web__take_screenshot', { type: 'png' }))).toBe(
      'received {"type":"png","scale":"css"}',
    );
    expect(text(await sys.system.call('browser', 'r1', 'web__take_screenshot', {}))).toBe(
      'received {"type":"png","scale":"css"}',
    );
    // What the caller sends is never replaced.
    expect(
      text(
        await sys.system.call('browser', 'r1', 'web__take_screenshot', {
          type: 'jpeg',
          scale: 'device',
          fullPage: true,
        }),
      ),
    ).toBe('received {"type":"jpeg","scale":"device","fullPage":true}');
    expect(upstream.stats.calls).toBe(before + 3);
  });

  it('still refuses a real invalid argument naming the field, calling nothing', async () => {
    const before = upstream.stats.calls;
    const gif = await sys.system.callError('browser', 'r2', 'web__take_screenshot', { type: 'gif' });
    expect(gif.code).toBe('invalid_arguments');
    expect(gif.details.errors).toEqual([expect.objectContaining({ path: '/type', keyword: 'enum' })]);
    const extra = await sys.system.callError('browser', 'r2', 'web__take_screenshot', { type: 'png', zoom: 2 });
    expect(extra.details.errors).toEqual([expect.objectContaining({ path: '/zoom', keyword: 'additionalProperties' })]);
    const deep = await sys.system.callError('browser', 'r2', 'web__deep', deepArguments(40, { leaf: '' }));
    expect(deep.code).toBe('invalid_arguments');
    expect(deep.details.errors).toEqual([
      expect.objectContaining({ path: `${'/n'.repeat(39)}/leaf`, keyword: 'minLength' }),
    ]);
    const missing = await sys.system.callError('browser', 'r2', 'web__deep', deepArguments(40, {}));
    expect(missing.details.errors).toEqual([
      expect.objectContaining({ path: `${'/n'.repeat(39)}/leaf`, keyword: 'required' }),
    ]);
    expect(upstream.stats.calls).toBe(before);
  });

  it('calls the 40-deep tool with its arguments whole', async () => {
    const args = deepArguments(40, { leaf: 'bottom' });
    expect(text(await sys.system.call('browser', 'r3', 'web__deep', args))).toBe(`received ${JSON.stringify(args)}`);
  });

  it('lets through what the validator cannot check (100 $refs in a row), and counts filled and unchecked calls per server', async () => {
    expect(text(await sys.system.call('browser', 'r5', 'web__chain', { a: 1 }))).toBe('chain ran');
    const metrics = await metricsText(sys.system.telemetry);
    const value = (kind: string): number =>
      metricValue(metrics, 'mcpx_call_validation_total', { kind, mcpx_server: 'web' });
    expect(value('default_filled')).toBeGreaterThanOrEqual(2);
    expect(value('unchecked')).toBeGreaterThanOrEqual(1);
  });

  it('an approval shows the filled arguments, and the same call re-sent after it runs with them', async () => {
    const stopped = await sys.system.callError('browser', 'r4', 'web__screenshot_ask', { type: 'png' });
    expect(stopped.code).toBe('approval_required');
    const approvalId = stopped.details.approvalId as string;
    const { approvals } = await sys.system.api.act<{ approvals: ApprovalView[] }>('ListApprovals');
    // What the person sees is what will be sent.
    expect(approvals.find((a) => a.id === approvalId)?.arguments).toEqual({ scale: 'css', type: 'png' });
    await sys.system.api.act('ApproveToolCall', { approvalId });
    // The caller re-sends what it sent first; it is filled the same way, so it matches the approval.
    const out = await sys.system.call('browser', 'r4', 'web__screenshot_ask', { type: 'png' }, { approvalId });
    expect(text(out)).toBe('received {"type":"png","scale":"css"}');
  });

  it('through the agent endpoint: the deep tool is listed whole, the default reaches the server, an invalid argument is refused', async () => {
    const { token } = await sys.token('browser');
    const client = new Client({ name: 'schema-rule', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(sys.urlOf(sys.system.agentId('browser'))), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    try {
      const { tools } = await client.listTools();
      expect(tools.find((t) => t.name === 'web__deep')?.inputSchema).toEqual(deepSchema(40));
      const shot = await client.callTool({ name: 'web__take_screenshot', arguments: { type: 'png' } });
      expect(shot.isError).not.toBe(true);
      expect(shot.content).toEqual([{ type: 'text', text: 'received {"type":"png","scale":"css"}' }]);
      const deepArgs = deepArguments(40, { leaf: 'x' });
      const deep = await client.callTool({ name: 'web__deep', arguments: deepArgs });
      expect(deep.content).toEqual([{ type: 'text', text: `received ${JSON.stringify(deepArgs)}` }]);
      const bad = await client.callTool({ name: 'web__take_screenshot', arguments: { type: 'gif' } });
      expect(bad.isError).toBe(true);
      expect((bad._meta as Record<string, ErrorMeta>)['io.mcpx/error']!.code).toBe('invalid_arguments');
      expect((bad.content as Array<{ text: string }>)[0]!.text).toContain('/type');
    } finally {
      await client.close();
    }
  });
});
