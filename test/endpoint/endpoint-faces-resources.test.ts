import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Server } from '@modelcontextprotocol/server';
import { ProxyClient } from '@mcpx/proxy-client';
import { setupTelemetry, type Telemetry } from '@mcpx/telemetry';
import { startConformanceUpstream, type ConformanceUpstream } from '../servers/conformance-upstream.js';
import { startEverythingServer, type EverythingServer } from '../servers/everything.js';
import { noResourceTemplates, serveStatelessMcp } from '../servers/stateless-mcp.js';
import { startEndpointSystem, type EndpointSystem } from './endpoint-harness.js';
import { eventually } from '../support/system.js';
import { withBearer } from '../support/fixtures/bearer.js';

/** What the hostile upstream lists: URIs a client must never be handed, one fine one, an app, a huge one. */
const HOSTILE_URIS = [
  'file:///srv/../etc/passwd',
  'test://a/%2e%2e/b',
  'javascript:alert(1)',
  'JavaScript:alert(2)',
  'test://x\u202Egnp.exe',
  'test://bell\u0007',
];
const BIG_BYTES = 3 * 1024 * 1024;

/** A modern SDK v2 server that lists hostile resource URIs and answers a read with 3 MiB, plus an echo tool. */
async function startHostileUpstream(): Promise<{
  url: string;
  reads: () => number;
  lists: () => number;
  close(): Promise<void>;
}> {
  let reads = 0;
  let lists = 0;
  const factory = (): Server => {
    const server = new Server(
      { name: 'hostile-resources', version: '1.0.0' },
      { capabilities: { tools: {}, resources: {}, prompts: {} } },
    );
    server.setRequestHandler('tools/list', () => ({
      tools: [{ name: 'echo', inputSchema: { type: 'object' } }],
      ttlMs: 0,
      cacheScope: 'private' as const,
    }));
    server.setRequestHandler('tools/call', () => ({ content: [{ type: 'text' as const, text: 'ok' }] }));
    server.setRequestHandler('resources/list', () => {
      lists++;
      return {
        resources: [
          ...HOSTILE_URIS.map((uri, i) => ({ uri, name: `bad${i}` })),
          { uri: 'test://fine', name: 'fine' },
          { uri: 'test://big', name: 'big' },
        ],
        ttlMs: 60_000,
        cacheScope: 'private' as const,
      };
    });
    server.setRequestHandler('resources/templates/list', noResourceTemplates);
    server.setRequestHandler('resources/read', (request) => {
      reads++;
      const uri = request.params.uri;
      if (uri === 'test://big')
        return {
          contents: [
            { uri, mimeType: 'text/plain', text: 'a'.repeat(64) },
            { uri, mimeType: 'text/plain', text: 'b'.repeat(BIG_BYTES) },
          ],
        };
      return { contents: [{ uri, mimeType: 'text/plain', text: `read ${uri}` }] };
    });
    server.setRequestHandler('prompts/list', () => ({
      prompts: [{ name: 'p', arguments: [{ name: 'x' }] }],
      ttlMs: 0,
      cacheScope: 'private' as const,
    }));
    server.setRequestHandler('prompts/get', (request) => ({
      messages: [
        { role: 'user' as const, content: { type: 'text' as const, text: `x=${String(request.params.arguments?.x)}` } },
      ],
    }));
    return server;
  };
  return { ...(await serveStatelessMcp(factory)), reads: () => reads, lists: () => lists };
}

/**
 * Resources, resource templates, prompts and completions of granted servers, relayed by the proxy
 * (`mcp.proxy.relay`), on the per-server face (own names and URIs) and the merged face (prompts
 * `<server>__<prompt>`, URIs wrapped in `mcpx://<server>/…`), both eras; hostile input from a
 * client (`..`, `javascript:`, bidi, a 10,000-deep prompt argument) and from a server (listed
 * hostile URIs, a 3 MiB read) each get a bounded, typed outcome; results cached by the server's ttlMs.
 */
describe('resources and prompts through the endpoint faces', () => {
  const exporter = new InMemorySpanExporter();
  let telemetry: Telemetry;
  let sys: EndpointSystem;
  let conf: ConformanceUpstream;
  let hostile: Awaited<ReturnType<typeof startHostileUpstream>>;
  let everything: EverythingServer;
  let token = '';

  beforeAll(async () => {
    telemetry = await setupTelemetry({ serviceName: 'endpoint-faces-resources-test', spanExporter: exporter });
    [sys, conf, hostile, everything] = await Promise.all([
      startEndpointSystem({ telemetry }),
      startConformanceUpstream(),
      startHostileUpstream(),
      startEverythingServer('streamableHttp'),
    ]);
    await sys.system.setServer('conf', conf.url);
    await sys.system.setServer('wild', hostile.url);
    await sys.system.setServer('everything', everything.url);
    await sys.system.createAgent('reader', ['conf', 'wild', 'everything'], 3);
    ({ token } = await sys.token('reader'));
  }, 120_000);

  afterAll(async () => {
    await sys?.stop();
    await Promise.all([conf?.close(), hostile?.close(), everything?.close()]);
    await telemetry?.shutdown();
  });

  const faceUrl = (server: string): string => `${sys.endpoint.url}/v1/agents/reader/servers/${server}/mcp`;
  const connect = async (url: string): Promise<Client> => {
    const client = new Client({ name: 'v2-resources', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(new StreamableHTTPClientTransport(new URL(url), withBearer(token)));
    return client;
  };

  it('serves a server’s resources, templates, prompts and completions under their own names on its face', async () => {
    const client = await connect(faceUrl('conf'));
    try {
      const { resources } = await client.listResources();
      expect(resources.map((r) => r.uri)).toEqual(
        expect.arrayContaining(['test://static-text', 'test://static-binary']),
      );
      const text = await client.readResource({ uri: 'test://static-text' });
      expect(text.contents).toEqual([
        { uri: 'test://static-text', mimeType: 'text/plain', text: 'This is the content of the static text resource.' },
      ]);
      const blob = await client.readResource({ uri: 'test://static-binary' });
      expect((blob.contents[0] as { blob?: string }).blob?.length).toBeGreaterThan(10);
      const { resourceTemplates } = await client.listResourceTemplates();
      expect(resourceTemplates.map((t) => t.uriTemplate)).toContain('test://template/{id}/data');
      const data = await client.readResource({ uri: 'test://template/42/data' });
      expect(JSON.parse((data.contents[0] as { text: string }).text)).toMatchObject({ id: '42', templateTest: true });
      const { prompts } = await client.listPrompts();
      expect(prompts.map((p) => p.name)).toEqual(
        expect.arrayContaining(['test_simple_prompt', 'test_prompt_with_arguments', 'test_prompt_with_image']),
      );
      const got = await client.getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'a', arg2: 'b' } });
      expect(got.messages).toEqual([
        { role: 'user', content: { type: 'text', text: "Prompt with arguments: arg1='a', arg2='b'" } },
      ]);
      const image = await client.getPrompt({ name: 'test_prompt_with_image' });
      expect(image.messages.map((m) => m.content.type)).toEqual(['image', 'text']);
      const done = await client.complete({
        ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' },
        argument: { name: 'arg1', value: 'x' },
      });
      expect(done.completion.values).toEqual([]);
      // The server's own miss, as the server says it (a client sees its error, not an empty answer).
      await expect(client.getPrompt({ name: 'no_such_prompt' })).rejects.toThrow();
    } finally {
      await client.close();
    }
    const spans = exporter.getFinishedSpans().map((s) => s.name);
    expect(spans).toEqual(
      expect.arrayContaining(['endpoint.resources/read', 'endpoint.prompts/get', 'endpoint.completion/complete']),
    );
  });

  it('serves an SDK v1 client (2025-11-25) the same resources and prompts', async () => {
    const client = new V1Client({ name: 'v1-resources', version: '1.0.0' });
    await client.connect(new V1Transport(new URL(faceUrl('conf')), withBearer(token)));
    try {
      const text = await client.readResource({ uri: 'test://static-text' });
      expect(text.contents[0]).toMatchObject({
        uri: 'test://static-text',
        text: 'This is the content of the static text resource.',
      });
      const got = await client.getPrompt({ name: 'test_simple_prompt' });
      expect(got.messages[0]?.content).toEqual({ type: 'text', text: 'This is a simple prompt for testing.' });
    } finally {
      await client.close();
    }
  });

  it('relays a legacy (2025-11-25) server’s resources and prompts: server-everything on its face', async () => {
    const client = await connect(faceUrl('everything'));
    try {
      const { resources, nextCursor } = await client.listResources();
      expect(resources.length).toBeGreaterThan(0);
      expect(typeof nextCursor === 'string' || nextCursor === undefined).toBe(true);
      const first = resources[0]!;
      const read = await client.readResource({ uri: first.uri });
      expect(read.contents[0]?.uri).toBe(first.uri);
      const { prompts } = await client.listPrompts();
      expect(prompts.length).toBeGreaterThan(0);
      const simple = prompts.find((p) => (p.arguments ?? []).every((a) => a.required !== true));
      if (simple !== undefined)
        expect((await client.getPrompt({ name: simple.name })).messages.length).toBeGreaterThan(0);
    } finally {
      await client.close();
    }
  });

  it('names prompts <server>__<prompt> and wraps URIs on the merged face, and maps them back exactly', async () => {
    const client = await connect(sys.urlOf('reader'));
    try {
      const prompts: string[] = [];
      let cursor: string | undefined;
      for (let i = 0; i < 10; i++) {
        const page = await client.listPrompts(cursor === undefined ? {} : { cursor });
        prompts.push(...page.prompts.map((p) => p.name));
        cursor = page.nextCursor;
        if (cursor === undefined) break;
      }
      expect(prompts).toEqual(expect.arrayContaining(['conf__test_simple_prompt', 'wild__p']));
      const got = await client.getPrompt({ name: 'wild__p', arguments: { x: 'merged' } });
      expect(got.messages).toEqual([{ role: 'user', content: { type: 'text', text: 'x=merged' } }]);
      const uris: string[] = [];
      cursor = undefined;
      for (let i = 0; i < 10; i++) {
        const page = await client.listResources(cursor === undefined ? {} : { cursor });
        uris.push(...page.resources.map((r) => r.uri));
        cursor = page.nextCursor;
        if (cursor === undefined) break;
      }
      const wrapped = `mcpx://conf/${encodeURIComponent('test://static-text')}`;
      expect(uris).toContain(wrapped);
      const read = await client.readResource({ uri: wrapped });
      expect(read.contents).toEqual([
        { uri: wrapped, mimeType: 'text/plain', text: 'This is the content of the static text resource.' },
      ]);
      const { resourceTemplates } = await client.listResourceTemplates();
      const template = resourceTemplates.find((t) => t.uriTemplate.startsWith('mcpx://conf/'))?.uriTemplate ?? '';
      expect(template).toBe(
        `mcpx://conf/${encodeURIComponent('test://template/').replace(/%7B/g, '{')}{id}${encodeURIComponent('/data')}`,
      );
      const expanded = await client.readResource({ uri: template.replace('{id}', '7') });
      expect((expanded.contents[0] as { text: string }).text).toContain('"id":"7"');
      // Names that do not map back to a granted server are unknown, whatever the server has.
      await expect(client.getPrompt({ name: 'test_simple_prompt' })).rejects.toThrow(/Unknown prompt/);
      await expect(client.getPrompt({ name: 'nobody__test_simple_prompt' })).rejects.toThrow(/Unknown prompt/);
      await expect(client.readResource({ uri: 'test://static-text' })).rejects.toThrow(/Unknown resource/);
      await expect(
        client.readResource({ uri: `ui://conf/${encodeURIComponent('test://static-text')}` }),
      ).rejects.toThrow(/Unknown resource/);
    } finally {
      await client.close();
    }
  });

  it('refuses hostile URIs and prompt arguments from a client with typed errors, before the server is asked', async () => {
    const client = await connect(faceUrl('wild'));
    const before = hostile.reads();
    try {
      for (const uri of HOSTILE_URIS) {
        const err = await client.readResource({ uri }).then(
          () => undefined,
          (e: unknown) =>
            e as { code?: number; message: string; data?: { code?: string; details?: { field?: string } } },
        );
        expect(err, uri).toBeDefined();
        expect(err?.code).toBe(-32602);
        expect(err?.data).toMatchObject({ code: 'invalid_input', details: { field: 'params.uri' } });
      }
      // A 10,000-deep prompt argument: refused as the non-string it is, nothing sent.
      const deep = `${'{"d":'.repeat(10_000)}"leaf"${'}'.repeat(10_000)}`;
      const raw = await fetch(faceUrl('wild'), {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-11-25',
        },
        body: `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"p","arguments":{"x":${deep}}}}`,
      });
      const text = await raw.text();
      expect(text).toMatch(/-32602|-32600|invalid/i);
      expect(hostile.reads()).toBe(before);
    } finally {
      await client.close();
    }
    // The proxy refuses the same from a caller that skips the endpoint's checks (its own decoder).
    const direct = new ProxyClient(sys.system.nc, sys.system.subjects);
    await expect(
      direct.relay({
        account: sys.system.account,
        agent: sys.system.agentId('reader'),
        run: 'r1',
        server: 'wild',
        method: 'resources/read',
        params: { uri: 'javascript:alert(1)' },
      }),
    ).rejects.toMatchObject({
      code: 'invalid_input',
      details: { field: 'params.uri' },
    });
  });

  it('leaves out a server’s hostile URIs and bounds a huge read, saying so', async () => {
    const client = await connect(faceUrl('wild'));
    try {
      const { resources, _meta } = await client.listResources();
      expect(resources.map((r) => r.uri)).toEqual(['test://fine', 'test://big']);
      expect(_meta?.['io.mcpx/omitted']).toEqual({ unsafeUris: HOSTILE_URIS.length });
      const big = await client.readResource({ uri: 'test://big' });
      expect(big.contents).toHaveLength(2);
      expect((big.contents[0] as { text: string }).text).toBe('a'.repeat(64));
      expect((big.contents[1] as { text: string }).text).toMatch(
        /^\[mcpx: left out: \d+ bytes, over the \d+-byte bound of a relayed result\]$/,
      );
      expect((big._meta as Record<string, unknown>)['io.mcpx/omitted']).toMatchObject({ overLimit: 1 });
    } finally {
      await client.close();
    }
  });

  /** The reader's `resources/list` of server `wild` in run `run`, as the proxy is asked it directly. */
  const wildResourcesList = (run: string) => ({
    account: sys.system.account,
    agent: sys.system.agentId('reader'),
    run,
    server: 'wild',
    method: 'resources/list' as const,
    params: {},
  });

  it('keeps a result by the server’s ttlMs per account and server: the second list does not reach the server', async () => {
    const direct = new ProxyClient(sys.system.nc, sys.system.subjects);
    const req = wildResourcesList('ttl-run');
    const first = await direct.relay(req);
    expect(first.ttlMs).toBe(60_000);
    const listed = hostile.lists();
    const again = await direct.relay(req);
    expect(again).toEqual(first);
    expect(hostile.lists()).toBe(listed);
    // Other params (a cursor) are another entry.
    await direct.relay({ ...req, params: { cursor: 'x' } }).catch(() => undefined);
    expect(hostile.lists()).toBe(listed + 1);
    // Not granted: refused by the proxy itself, whatever the endpoint would do.
    await expect(direct.relay({ ...req, server: 'nope' })).rejects.toMatchObject({ code: 'not_granted' });
  });

  it('forgets what it kept of a server when its configuration or credentials change: the next list reaches the server', async () => {
    const direct = new ProxyClient(sys.system.nc, sys.system.subjects);
    const req = wildResourcesList('ttl-change-run');
    await direct.relay(req);
    const listed = hostile.lists();
    await direct.relay(req);
    expect(hostile.lists()).toBe(listed);
    // Another credential header: the server's config is saved again (and discovered).
    await sys.system.api.act('SetMcpServer', {
      name: 'wild',
      config: { url: hostile.url, headers: { 'x-tenant': 'second' } },
    });
    await eventually(
      async () => {
        await direct.relay(req);
        return hostile.lists() > listed ? true : undefined;
      },
      10_000,
      'a list after the change reaches the server',
    );
    // And is kept again from then on.
    const now = hostile.lists();
    await direct.relay(req);
    expect(hostile.lists()).toBe(now);
  });
});
