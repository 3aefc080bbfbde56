import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEndpoint } from '@mcpx/endpoint';
import { setupTelemetry, type Telemetry } from '@mcpx/telemetry';
import {
  addTool,
  bigTextTool,
  echoTool,
  errorTool,
  imageTool,
  startTestMcpServer,
  structuredTool,
  type TestMcpServer,
} from '../servers/index.js';
import { dropTool } from '../approvals/approval-tools.js';
import { eventually } from '../support/system.js';
import { startEndpointSystem, type EndpointSystem } from './endpoint-harness.js';
import { MODERN_VERSION, post, type RpcAnswer } from './raw-mcp.js';
import { startSdkOnlyEndpoint } from '../support/fixtures/sdk-only-endpoint.js';

/**
 * The lean tools/call path answers exactly as the SDK's handler does: two endpoints on one
 * system, one with the lean path (the default) and one with ENDPOINT_LEAN_CALLS=off, are sent the
 * same requests of both eras (results with text, images, structured content, a server's tool
 * error, refusals, an approval asked of the client's user, an unknown tool, requests the lean
 * path leaves to the SDK); status, headers (but the date) and bodies are equal byte for byte once
 * the ids that differ by nature (approvals, sealed states, deadlines) are masked. Spans say which
 * path served each call, so the comparison is not of one path with itself.
 */
describe('the lean tools/call path: the same wire as the SDK path', () => {
  const exporter = new InMemorySpanExporter();
  let telemetry: Telemetry;
  let sys: EndpointSystem;
  let sdkOnly: RunningEndpoint;
  let upstream: TestMcpServer;
  let token = '';

  beforeAll(async () => {
    telemetry = await setupTelemetry({ serviceName: 'endpoint-lean-test', spanExporter: exporter });
    [sys, upstream] = await Promise.all([
      startEndpointSystem({ telemetry, endpointEnv: { ENDPOINT_LEAN_CALLS: 'on' } }),
      startTestMcpServer({
        era: 'modern',
        tools: [echoTool(), addTool(), imageTool(), errorTool(), structuredTool(), bigTextTool(300_000), dropTool()],
      }),
    ]);
    sdkOnly = await startSdkOnlyEndpoint(sys.system, telemetry, 'endpoint-sdk-only');
    await sys.system.setServer('db', upstream.url);
    await sys.system.createAgent('ops', ['db'], 7);
    ({ token } = await sys.token('ops', { userMayApprove: true }));
  }, 120_000);

  afterAll(async () => {
    await sdkOnly?.stop();
    await sys?.stop();
    await upstream?.close();
    await telemetry?.shutdown();
  });

  /** A response with what differs by nature masked: the date, approval ids, sealed states, deadlines. */
  const masked = (r: RpcAnswer): { status: number; headers: Record<string, string>; body: string } => {
    const { date: _date, ...headers } = r.headers;
    const body = r.body
      .replace(/apr_[A-Za-z0-9_-]+/g, 'apr_X')
      .replace(/mcpx-apv1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+/g, 'STATE')
      .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g, 'TIME');
    return { status: r.status, headers, body };
  };

  const modernHeaders = (name: string): Record<string, string> => ({
    'mcp-protocol-version': MODERN_VERSION,
    'mcp-method': 'tools/call',
    'mcp-name': name,
  });
  const modernBody = (
    id: number | string,
    name: string,
    args: unknown,
    caps: Record<string, unknown> = {},
  ): unknown => ({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: {
      name,
      arguments: args,
      _meta: {
        'io.modelcontextprotocol/protocolVersion': MODERN_VERSION,
        'io.modelcontextprotocol/clientCapabilities': caps,
        'io.modelcontextprotocol/clientInfo': { name: 'same', version: '1.0.0' },
      },
    },
  });
  const legacyBody = (id: number | string, name: string, args: unknown): unknown => ({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name, arguments: args },
  });

  const cases: Array<[string, (base: string) => Promise<RpcAnswer>]> = [];
  const both = (label: string, body: unknown, headers: Record<string, string> = {}): void => {
    cases.push([label, (base) => post(`${base}/v1/agents/ops/mcp`, token, body, headers)]);
  };
  const calls: Array<[string, unknown]> = [
    ['db__echo', { text: 'hi ünïcödé ✓' }],
    ['db__add', { a: 2, b: 3 }],
    ['db__image', {}],
    ['db__fail', {}],
    ['db__structured', {}],
    ['db__big_text', {}],
    ['db__echo', { text: 7 }],
    ['db__drop_table', { table: 'users' }],
  ];
  for (const [i, [name, args]] of calls.entries()) {
    both(`modern ${name} ${JSON.stringify(args)}`, modernBody(100 + i, name, args), modernHeaders(name));
    both(`legacy ${name} ${JSON.stringify(args)}`, legacyBody(200 + i, name, args), {
      'mcp-protocol-version': '2025-11-25',
    });
  }
  both('modern, a string id', modernBody('req-1', 'db__echo', { text: 'x' }), modernHeaders('db__echo'));
  both(
    'modern, an approval asked of the user (forms declared)',
    modernBody(301, 'db__drop_table', { table: 'orders' }, { elicitation: { form: {} } }),
    modernHeaders('db__drop_table'),
  );
  both(
    'modern, a client that can open URLs only is not asked a form',
    modernBody(315, 'db__drop_table', { table: 'urls' }, { elicitation: { url: {} } }),
    modernHeaders('db__drop_table'),
  );
  both('legacy without a version header', legacyBody(302, 'db__echo', { text: 'x' }));
  // Left to the SDK by the lean path: the answers must still be the SDK's.
  both('modern, an unknown tool', modernBody(303, 'db__nope', {}), modernHeaders('db__nope'));
  both('modern, Mcp-Name not the tool', modernBody(304, 'db__echo', { text: 'x' }), modernHeaders('db__add'));
  both('legacy, JSON only accepted', legacyBody(305, 'db__echo', { text: 'x' }), { accept: 'application/json' });
  both('a batch', [legacyBody(306, 'db__echo', { text: 'x' })], { 'mcp-protocol-version': '2025-11-25' });
  both('not JSON', '{"jsonrpc":', { 'mcp-protocol-version': '2025-11-25' });
  both('modern, arguments not an object', modernBody(307, 'db__echo', ['x']), modernHeaders('db__echo'));
  both(
    'modern, no clientInfo',
    {
      jsonrpc: '2.0',
      id: 308,
      method: 'tools/call',
      params: {
        name: 'db__echo',
        arguments: { text: 'x' },
        _meta: {
          'io.modelcontextprotocol/protocolVersion': MODERN_VERSION,
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    },
    modernHeaders('db__echo'),
  );
  both('modern, the header says another version', modernBody(309, 'db__echo', { text: 'x' }), {
    ...modernHeaders('db__echo'),
    'mcp-protocol-version': '2025-11-25',
  });
  both(
    'legacy, a param the lean path does not know',
    {
      jsonrpc: '2.0',
      id: 310,
      method: 'tools/call',
      params: { name: 'db__echo', arguments: { text: 'x' }, task: { ttl: 1000 } },
    },
    { 'mcp-protocol-version': '2025-11-25' },
  );
  both(
    'legacy, a notification',
    { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 999 } },
    { 'mcp-protocol-version': '2025-11-25' },
  );
  both('legacy, an unknown version', legacyBody(311, 'db__echo', { text: 'x' }), {
    'mcp-protocol-version': '1999-01-01',
  });
  both('an allowed Origin', modernBody(312, 'db__echo', { text: 'x' }), {
    ...modernHeaders('db__echo'),
    origin: 'http://127.0.0.1',
  });
  both('a foreign Origin', modernBody(313, 'db__echo', { text: 'x' }), {
    ...modernHeaders('db__echo'),
    origin: 'https://evil.example',
  });
  both('a foreign Host', modernBody(314, 'db__echo', { text: 'x' }), {
    ...modernHeaders('db__echo'),
    host: 'evil.example',
  });

  it('answers every request as the SDK path does, byte for byte', async () => {
    for (const [label, send] of cases) {
      const lean = await send(sys.endpoint.url);
      const sdk = await send(sdkOnly.url);
      expect(masked(lean), label).toEqual(masked(sdk));
    }
  });

  it('the lean endpoint served the plain calls itself, the other none', async () => {
    exporter.reset();
    await post(
      `${sys.endpoint.url}/v1/agents/ops/mcp`,
      token,
      modernBody(400, 'db__echo', { text: 'lean' }),
      modernHeaders('db__echo'),
    );
    await post(`${sys.endpoint.url}/v1/agents/ops/mcp`, token, legacyBody(401, 'db__echo', { text: 'lean' }), {
      'mcp-protocol-version': '2025-11-25',
    });
    await post(
      `${sdkOnly.url}/v1/agents/ops/mcp`,
      token,
      modernBody(402, 'db__echo', { text: 'sdk' }),
      modernHeaders('db__echo'),
    );
    const spans = await eventually(
      async () => {
        const s = exporter.getFinishedSpans().filter((x) => x.name === 'endpoint.tools/call');
        return s.length >= 3 ? s : undefined;
      },
      10_000,
      'three call spans',
    );
    expect(spans.map((s) => s.attributes['mcpx.endpoint.path']).sort()).toEqual(['lean', 'lean', 'sdk']);
  });
});
