import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { setupTelemetry, type Telemetry } from '@mcpx/telemetry';
import { addTool, echoTool, progressTool, startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { dropTool } from '../approvals/approval-tools.js';
import { ApiClient } from '../support/api-client.js';
import { cliEnvFor, runCli } from '../support/cli.js';
import { eventually } from '../support/system.js';
import { startEndpointSystem, type EndpointSystem } from './endpoint-harness.js';
import { INSPECTORS, lastJson, runInspector } from './inspector-clis.js';
import { MODERN_VERSION, modernCall, post } from './raw-mcp.js';
import { listAllTools } from '../support/fixtures/mcp-lists.js';
import { legacyHeaders } from '../support/fixtures/legacy-raw-client.js';

type ErrorMeta = { code: string; details: Record<string, unknown> };
const errorOf = (result: { _meta?: Record<string, unknown> }): ErrorMeta =>
  result._meta?.['io.mcpx/error'] as ErrorMeta;

/**
 * The per-server face `/v1/agents/<agent>/servers/<server>/mcp`: one granted server's tools under
 * their own names, both eras, both serving paths (spans say which served), with the gateway's
 * rules as on the merged face (validation, approvals, the grant), and as attacks: a server not
 * granted, another account's server, an unknown one, a grant revoked while a client uses the face:
 * each answered exactly as another agent's path is (no oracle of names).
 */
describe('the per-server face of an agent endpoint', () => {
  const exporter = new InMemorySpanExporter();
  let telemetry: Telemetry;
  let sys: EndpointSystem;
  let db: TestMcpServer;
  let old: TestMcpServer;
  let hidden: TestMcpServer;
  let agentId = '';
  let token = '';

  beforeAll(async () => {
    telemetry = await setupTelemetry({ serviceName: 'endpoint-faces-test', spanExporter: exporter });
    [sys, db, old, hidden] = await Promise.all([
      // Two tools per page, so the face's own listing pages; no failed-token limit (the attacks below fail on purpose).
      startEndpointSystem({
        telemetry,
        endpointEnv: { ENDPOINT_PAGE_SIZE: '2', ENDPOINT_TOKEN_FAILURES_PER_ADDRESS: '0' },
      }),
      startTestMcpServer({ era: 'modern', tools: [echoTool(), addTool(), dropTool(), progressTool()] }),
      startTestMcpServer({ era: 'legacy', tools: [echoTool()] }),
      startTestMcpServer({ era: 'modern', tools: [echoTool()] }),
    ]);
    await sys.system.setServer('db', db.url);
    await sys.system.setServer('old', old.url);
    await sys.system.setServer('hidden', hidden.url);
    agentId = await sys.system.createAgent('ops', ['db', 'old'], 5);
    ({ token } = await sys.token('ops'));
  }, 120_000);

  afterAll(async () => {
    await sys?.stop();
    await Promise.all([db?.close(), old?.close(), hidden?.close()]);
    await telemetry?.shutdown();
  });

  const faceUrl = (server: string, agent = 'ops'): string =>
    `${sys.endpoint.url}/v1/agents/${encodeURIComponent(agent)}/servers/${encodeURIComponent(server)}/mcp`;
  const auth = (): Record<string, string> => ({ authorization: `Bearer ${token}` });
  const pathsOf = (tool: string): string[] =>
    exporter
      .getFinishedSpans()
      .filter((s) => s.name === 'endpoint.tools/call' && s.attributes['mcpx.tool'] === tool)
      .map((s) => String(s.attributes['mcpx.endpoint.path']));

  it('serves an SDK v2 client one server’s tools under their own names, paged, and calls them', async () => {
    const client = new Client({ name: 'v2-face', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(faceUrl('db', agentId)), { requestInit: { headers: auth() } }),
    );
    try {
      const tools = await listAllTools(client);
      expect(tools.map((t) => t.name)).toEqual(['add', 'drop_table', 'echo', 'progress']);
      expect(tools.find((t) => t.name === 'drop_table')?._meta).toMatchObject({
        'io.mcpx/permission': 'always_ask',
        'io.mcpx/server': 'db',
      });
      expect(tools.find((t) => t.name === 'echo')?.inputSchema).toMatchObject({
        type: 'object',
        properties: { text: { type: 'string' } },
      });
      const before = db.stats.calls;
      const out = await client.callTool({ name: 'echo', arguments: { text: 'through the face' } });
      expect(out.isError).toBeFalsy();
      expect(JSON.stringify(out.content)).toContain('through the face');
      expect(db.stats.calls).toBe(before + 1);
      // The merged face's names are not this face's, and another server's tools are not here.
      await expect(client.callTool({ name: 'db__echo', arguments: { text: 'x' } })).rejects.toThrow(
        /Unknown tool: db__echo/,
      );
      // The contract is checked as on the merged face: a miss never reaches the server.
      const bad = await client.callTool({ name: 'add', arguments: { a: 'one', b: 2 } });
      expect(bad.isError).toBe(true);
      expect(errorOf(bad).code).toBe('invalid_arguments');
      expect(db.stats.calls).toBe(before + 1);
    } finally {
      await client.close();
    }
  });

  it('serves an SDK v1 client (2025-11-25) a legacy server’s face', async () => {
    const client = new V1Client({ name: 'v1-face', version: '1.0.0' });
    await client.connect(new V1Transport(new URL(faceUrl('old')), { requestInit: { headers: auth() } }));
    try {
      const tools = await listAllTools(client);
      expect(tools.map((t) => t.name)).toEqual(['echo']);
      const out = await client.callTool({ name: 'echo', arguments: { text: 'legacy face' } });
      expect(JSON.stringify(out.content)).toContain('legacy face');
    } finally {
      await client.close();
    }
  });

  it('serves a call on both paths (lean and SDK), with the same result as the merged face', async () => {
    exporter.reset();
    const lean = await modernCall(faceUrl('db'), token, 'echo', { text: 'same' }, {});
    expect(lean.status).toBe(200);
    const merged = await modernCall(sys.urlOf('ops'), token, 'db__echo', { text: 'same' }, {});
    expect(lean.result?.content).toEqual(merged.result?.content);
    // A 2025 call (one SSE event), and one with a progress token (the SDK's path serves it).
    const legacy = await post(
      faceUrl('db'),
      token,
      { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'echo', arguments: { text: 'same' } } },
      { 'mcp-protocol-version': '2025-11-25' },
    );
    expect(legacy.result?.content).toEqual(merged.result?.content);
    const withProgress = await post(
      faceUrl('db'),
      token,
      {
        jsonrpc: '2.0',
        id: 8,
        method: 'tools/call',
        params: { name: 'echo', arguments: { text: 'same' }, _meta: { progressToken: 'p1' } },
      },
      { 'mcp-protocol-version': '2025-11-25' },
    );
    expect(withProgress.result?.content).toEqual(merged.result?.content);
    await eventually(async () => (pathsOf('db__echo').length >= 4 ? true : undefined), 10_000, 'four call spans');
    const paths = pathsOf('db__echo');
    expect(paths).toContain('sdk');
    if (process.env.ENDPOINT_LEAN_CALLS !== 'off')
      expect(paths.filter((p) => p === 'lean').length).toBeGreaterThanOrEqual(2);
    // An unknown tool on the lean path's shape goes to the SDK's answer: invalid params, its own name.
    const unknown = await modernCall(faceUrl('db'), token, 'db__echo', {}, {});
    expect(unknown.message?.error?.message).toMatch(/Unknown tool: db__echo/);
  });

  it('relays progress to a 2026-07-28 client of the face', async () => {
    const client = new Client({ name: 'v2-progress', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(faceUrl('db')), { requestInit: { headers: auth() } }),
    );
    try {
      const seen: number[] = [];
      const out = await client.callTool(
        { name: 'progress', arguments: { steps: 2 } },
        { onprogress: (p) => seen.push(p.progress) },
      );
      expect(out.isError).toBeFalsy();
      expect(seen.length).toBeGreaterThanOrEqual(1);
    } finally {
      await client.close();
    }
  });

  it('stops an always_ask tool for the owner’s approval as the merged face does; the approved call runs once', async () => {
    const client = new Client({ name: 'v2-approve', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(faceUrl('db')), { requestInit: { headers: auth() } }),
    );
    try {
      const before = db.stats.calls;
      const stopped = await client.callTool({ name: 'drop_table', arguments: { table: 'users' } });
      expect(stopped.isError).toBe(true);
      expect(errorOf(stopped).code).toBe('approval_required');
      expect(db.stats.calls).toBe(before);
      const approvalId = errorOf(stopped).details.approvalId as string;
      await sys.system.api.act('ApproveToolCall', { approvalId });
      const ran = await client.callTool({
        name: 'drop_table',
        arguments: { table: 'users' },
        _meta: { 'io.mcpx/approvalId': approvalId },
      });
      expect(ran.content).toEqual([{ type: 'text', text: 'dropped users' }]);
      const replay = await client.callTool({
        name: 'drop_table',
        arguments: { table: 'users' },
        _meta: { 'io.mcpx/approvalId': approvalId },
      });
      expect(replay.isError).toBe(true);
      expect(db.stats.calls).toBe(before + 1);
    } finally {
      await client.close();
    }
  });

  it('answers a server not granted, another account’s server and an unknown one exactly as another agent’s path', async () => {
    const other = new ApiClient(sys.system.api.apiUrl);
    await other.act('SetMcpServer', { name: 'theirs', config: { url: hidden.url } });
    await other.act('CreateAgent', { name: 'ops', definition: { mcpServers: ['theirs'] } });
    const list = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
    const ask = async (url: string): Promise<{ status: number; body: string; challenge: string | null }> => {
      const res = await fetch(url, {
        method: 'POST',
        headers: legacyHeaders(token),
        body: list,
      });
      return { status: res.status, body: await res.text(), challenge: res.headers.get('www-authenticate') };
    };
    const wrongAgent = await ask(sys.urlOf('nobody'));
    expect(wrongAgent.status).toBe(401);
    for (const server of ['hidden', 'theirs', 'nope', 'db/../hidden', 'DB']) {
      expect(await ask(faceUrl(server))).toEqual(wrongAgent);
      expect(await ask(faceUrl(server, agentId))).toEqual(wrongAgent);
    }
    // A call there is refused the same way (before its body is read): nothing reaches the server.
    const call = await modernCall(faceUrl('hidden'), token, 'echo', { text: 'x' }, {});
    expect(call.status).toBe(401);
    expect(hidden.stats.calls).toBe(0);
    // A malformed segment names the field, whatever exists.
    const malformed = await ask(`${sys.endpoint.url}/v1/agents/ops/servers/%ZZ/mcp`);
    expect(malformed.status).toBe(400);
    expect(JSON.parse(malformed.body)).toMatchObject({
      error: { code: 'invalid_input', details: { field: 'server' } },
    });
  });

  it('prints the face’s URL and client configs with mcpx agents endpoint --server; the Inspector CLI lists and calls through it', async () => {
    const { env } = cliEnvFor(sys.system.api, { MCPX_ENDPOINT_URL: sys.endpoint.url });
    const shown = await runCli(['agents', 'endpoint', 'ops', '--server', 'db', '--token', token, '--json'], env);
    expect(shown.code, shown.stderr).toBe(0);
    const printed = JSON.parse(shown.stdout) as { url: string; server: string; snippets: Record<string, string> };
    expect(printed.url).toBe(`${sys.endpoint.url}/v1/agents/${agentId}/servers/db/mcp`);
    expect(printed.server).toBe('db');
    expect(printed.snippets.vscode).toContain(printed.url);
    expect(printed.snippets.mcpServers).toContain('mcpx-ops-db');
    const human = await runCli(['agents', 'endpoint', 'ops', '--server', 'db'], env);
    expect(human.stdout).toContain(printed.url);
    expect(human.stdout).toContain('server db alone');
    // A server the agent is not granted: refused with what to do, no URL printed.
    const refused = await runCli(['agents', 'endpoint', 'ops', '--server', 'hidden', '--json'], env);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('not granted the server "hidden"');
    expect(refused.stdout).not.toContain('/servers/hidden/');

    const { bin, mode } = INSPECTORS['inspector 2.x'];
    const common = [...mode, printed.url, '--transport', 'http', '--header', `Authorization: Bearer ${token}`];
    const list = await runInspector(bin, [...common, '--method', 'tools/list']);
    expect(list.code, list.stderr).toBe(0);
    expect(lastJson(list.stdout).tools.map((t: { name: string }) => t.name)).toEqual([
      'add',
      'drop_table',
      'echo',
      'progress',
    ]);
    const call = await runInspector(bin, [
      ...common,
      '--method',
      'tools/call',
      '--tool-name',
      'echo',
      '--tool-arg',
      'text=inspected',
    ]);
    expect(call.code, call.stderr).toBe(0);
    expect(JSON.stringify(lastJson(call.stdout).content)).toContain('inspected');
  }, 120_000);

  it('stops serving a server once its grant is revoked', async () => {
    const { token: second } = await sys.token('ops');
    const url = faceUrl('old');
    expect((await modernCall(url, second, 'echo', { text: 'still' }, {})).status).toBe(200);
    await sys.system.api.act('UpdateAgent', { agent: agentId, definition: { mcpServers: ['db'] } });
    await eventually(
      async () => ((await modernCall(url, second, 'echo', { text: 'gone' }, {})).status === 401 ? true : undefined),
      15_000,
      'the revoked face refused',
    );
    // The merged face no longer lists it either, and the other face still serves.
    const left = await post(
      sys.urlOf('ops'),
      second,
      { jsonrpc: '2.0', id: 3, method: 'tools/list', params: {} },
      { 'mcp-protocol-version': '2025-11-25' },
    );
    expect(JSON.stringify(left.result)).not.toContain('old__');
    expect((await modernCall(faceUrl('db'), second, 'echo', { text: 'db' }, {})).status).toBe(200);
    expect(MODERN_VERSION).toBe('2026-07-28');
  });
});
