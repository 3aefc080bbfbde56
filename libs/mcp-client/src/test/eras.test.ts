import { describe, expect, it } from 'vitest';
import { defaultTools, echoTool, type TestTool } from '../../../../test/servers/index.js';
import {
  connectMcp,
  invalidMcpHeaderTools,
  isInputRequired,
  McpClientError,
  type EraVerdict,
  type Tool,
} from '../index.js';
import { clientHarness, confirmTool, text } from './harness.js';
import { sendJson, sendResult, startHandWritten } from '../../../../test/support/fixtures/hand-written-mcp.js';

const { server, connect, closeAfterAll } = clientHarness();

/** A fetch that records each request's headers and body as sent. */
function wireRecorder(): { fetch: typeof fetch; sent: Array<{ headers: Headers; body: unknown }> } {
  const sent: Array<{ headers: Headers; body: unknown }> = [];
  return {
    sent,
    fetch: async (input, init) => {
      const body = typeof init?.body === 'string' ? (JSON.parse(init.body) as unknown) : undefined;
      sent.push({ headers: new Headers(init?.headers), body });
      return await fetch(input, init);
    },
  };
}

describe.each(['modern', 'dual'] as const)('a %s server (SDK v2 createMcpHandler)', (era) => {
  it('is connected on the modern era with one server/discover and no handshake; lists and calls', async () => {
    const s = await server({ era, listHints: { ttlMs: 30_000, cacheScope: 'public' } });
    const c = await connect({ url: s.url });
    expect(c.era).toBe('modern');
    expect(c.protocolVersion).toBe('2026-07-28');
    expect(c.reprobed).toBe(false);
    expect(c.verdict).toMatchObject({
      era: 'modern',
      protocolVersion: '2026-07-28',
      discover: { supportedVersions: expect.arrayContaining(['2026-07-28']) },
    });
    expect(JSON.parse(JSON.stringify(c.verdict))).toEqual(c.verdict);
    expect(s.stats).toMatchObject({ discovers: 1, handshakes: 0 });
    const listed = await c.listToolsWithHints();
    expect(listed.tools.map((t) => t.name)).toEqual(['echo', 'add']);
    expect(listed).toMatchObject({ ttlMs: 30_000, cacheScope: 'public' });
    expect(text(await c.callTool({ name: 'echo', arguments: { text: 'hi' } }))).toBe('echo: hi');
    expect(s.stats.handshakes).toBe(0);
    expect(typeof c.listen).toBe('function');
  });

  it('connects with a stored modern verdict in zero round trips', async () => {
    const s = await server({ era });
    const first = await connect({ url: s.url });
    const verdict = JSON.parse(JSON.stringify(first.verdict)) as EraVerdict;
    const before = {
      discovers: s.stats.discovers,
      handshakes: s.stats.handshakes,
      calls: s.stats.calls,
      lists: s.stats.listCalls,
    };
    const c = await connect({ url: s.url, prior: verdict });
    expect({
      discovers: s.stats.discovers,
      handshakes: s.stats.handshakes,
      calls: s.stats.calls,
      lists: s.stats.listCalls,
    }).toEqual(before);
    expect(c).toMatchObject({ era: 'modern', reprobed: false });
    expect(text(await c.callTool({ name: 'echo', arguments: { text: 'x' } }))).toBe('echo: x');
    expect(s.stats.discovers).toBe(before.discovers);
  });
});

describe('listen on a modern connection', () => {
  it('opens subscriptions/listen and hears tools/list_changed; closes', async () => {
    const s = await server({ era: 'modern' });
    const c = await connect({ url: s.url });
    let changed = 0;
    const subscription = await c.listen?.(() => {
      changed += 1;
    });
    if (subscription === undefined) throw new Error('expected listen on a modern connection');
    s.setTools([echoTool()]);
    const endsAt = Date.now() + 5_000;
    while (changed === 0 && Date.now() < endsAt) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(changed).toBe(1);
    expect((await c.listTools()).map((t) => t.name)).toEqual(['echo']);
    await subscription.close();
  });
});

describe('a dual server', () => {
  it('is spoken to on the legacy era when the stored verdict says legacy', async () => {
    const s = await server({ era: 'dual' });
    const c = await connect({ url: s.url, prior: { era: 'legacy', protocolVersion: '2025-11-25', transport: 'http' } });
    expect(c).toMatchObject({ era: 'legacy', reprobed: false });
    expect(s.stats).toMatchObject({ discovers: 0, handshakes: 1 });
    expect(text(await c.callTool({ name: 'echo', arguments: { text: 'old' } }))).toBe('echo: old');
  });
});

describe('a legacy server (SDK v1)', () => {
  it('is probed, falls back to initialize, and records a legacy verdict', async () => {
    const s = await server({ era: 'legacy' });
    const c = await connect({ url: s.url });
    expect(c.verdict).toEqual({ era: 'legacy', protocolVersion: '2025-11-25', transport: 'http' });
    expect(s.stats.handshakes).toBe(1);
    expect(c.listen).toBeUndefined();
    expect(text(await c.callTool({ name: 'echo', arguments: { text: 'v1' } }))).toBe('echo: v1');
  });

  it('connects with a legacy verdict straight to initialize (no probe)', async () => {
    const s = await server({ era: 'legacy' });
    const recorder = wireRecorder();
    await connect({
      url: s.url,
      fetch: recorder.fetch,
      prior: { era: 'legacy', protocolVersion: '2025-11-25', transport: 'http' },
    });
    expect(recorder.sent.map((r) => (r.body as { method?: string } | undefined)?.method)).not.toContain(
      'server/discover',
    );
    expect(s.stats).toMatchObject({ discovers: 0, handshakes: 1 });
  });

  it('falls back to SSE on a 4xx of the Streamable HTTP attempt, with a legacy sse verdict', async () => {
    const s = await server({ era: 'legacy', transport: 'sse' });
    const c = await connect({ url: s.url });
    expect(c.verdict).toEqual({ era: 'legacy', protocolVersion: '2025-11-25', transport: 'sse' });
  });
});

describe('a stale verdict', () => {
  it('a modern verdict on a server that went back to legacy is probed again once, on the first request', async () => {
    const modern = await server({ era: 'modern' });
    const verdict = (await connect({ url: modern.url })).verdict;
    const legacy = await server({ era: 'legacy' });
    const c = await connect({ url: legacy.url, prior: verdict });
    expect(text(await c.callTool({ name: 'echo', arguments: { text: 'again' } }))).toBe('echo: again');
    expect(c).toMatchObject({ era: 'legacy', reprobed: true });
    expect(c.verdict).toEqual({ era: 'legacy', protocolVersion: '2025-11-25', transport: 'http' });
    expect(legacy.stats.handshakes).toBe(1);
  });

  it('a legacy verdict on a server that moved to the modern era is probed again once at connect', async () => {
    const s = await server({ era: 'modern' });
    const c = await connect({ url: s.url, prior: { era: 'legacy', protocolVersion: '2025-11-25', transport: 'http' } });
    expect(c).toMatchObject({ era: 'modern', reprobed: true });
    expect(s.stats.discovers).toBe(1);
    expect(text(await c.callTool({ name: 'echo', arguments: { text: 'new' } }))).toBe('echo: new');
  });

  it('a modern verdict whose versions the client cannot speak is probed again at connect', async () => {
    const s = await server({ era: 'modern' });
    const verdict = (await connect({ url: s.url })).verdict;
    if (verdict.era !== 'modern') throw new Error('expected modern');
    const stale: EraVerdict = { ...verdict, discover: { ...verdict.discover, supportedVersions: ['2099-01-01'] } };
    const c = await connect({ url: s.url, prior: stale });
    expect(c).toMatchObject({ era: 'modern', reprobed: true });
  });
});

describe('a modern call on the wire', () => {
  it('carries Mcp-Method, Mcp-Name, Mcp-Param-* of x-mcp-header parameters, and _meta with traceparent', async () => {
    const regional: TestTool = {
      ...echoTool(),
      name: 'regional',
      inputSchema: {
        type: 'object',
        properties: { region: { type: 'string', 'x-mcp-header': 'Region' }, text: { type: 'string' } },
      },
    };
    const s = await server({ era: 'modern', tools: [...defaultTools(), regional] });
    const recorder = wireRecorder();
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const c = await connect({
      url: s.url,
      fetch: recorder.fetch,
      traceCarrier: () => ({ traceparent, tracestate: 'mcpx=1' }),
    });
    const tool = (await c.listTools()).find((t) => t.name === 'regional');
    recorder.sent.length = 0;
    expect(text(await c.callTool({ name: 'regional', arguments: { region: 'eu-west', text: 'hi' } }, { tool }))).toBe(
      'echo: hi',
    );
    const call = recorder.sent.find((r) => (r.body as { method?: string }).method === 'tools/call');
    expect(call?.headers.get('mcp-method')).toBe('tools/call');
    expect(call?.headers.get('mcp-name')).toBe('regional');
    expect(call?.headers.get('mcp-param-region')).toBe('eu-west');
    const meta = (call?.body as { params: { _meta: Record<string, unknown> } }).params._meta;
    expect(meta).toMatchObject({
      traceparent,
      tracestate: 'mcpx=1',
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    });
    expect(meta['io.modelcontextprotocol/clientInfo']).toMatchObject({ name: 'mcp-connector' });
    expect(s.stats.headersSeen.get('mcp-param-region')).toContain('eu-west');
  });

  it('returns an input_required result as it came (nothing answers it)', async () => {
    const s = await server({ era: 'modern', tools: [confirmTool()] });
    const c = await connect({ url: s.url, capabilities: { elicitation: { form: {} } } });
    const result = await c.callTool({ name: 'confirm', arguments: {} });
    expect(isInputRequired(result)).toBe(true);
    expect(result).toMatchObject({
      resultType: 'input_required',
      inputRequests: { ok: { method: 'elicitation/create' } },
    });
    expect(s.stats.calls).toBe(1);
  });
});

/** A modern server whose tools/call answer stream sends a priming event and then breaks. */
async function brokenStreamServer(): Promise<{ url: string; calls: number }> {
  const state = { calls: 0 };
  const s = await startHandWritten((msg, res) => {
    if (msg.method === 'tools/call') {
      state.calls += 1;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('id: 1\nretry: 10\ndata: \n\n');
      setTimeout(() => res.socket?.destroy(), 20);
      return;
    }
    res.writeHead(405).end();
  });
  closeAfterAll(s.close);
  return {
    url: s.url,
    get calls() {
      return state.calls;
    },
  };
}

describe('a broken modern response stream', () => {
  it('is not resumed: the call fails at once with maybe_executed (not retryable)', async () => {
    const s = await brokenStreamServer();
    const prior: EraVerdict = {
      era: 'modern',
      protocolVersion: '2026-07-28',
      discover: { supportedVersions: ['2026-07-28'], capabilities: { tools: {} } },
    };
    const c = await connect({ url: s.url, prior });
    const error = await c.callTool({ name: 'echo', arguments: {} }, { timeoutMs: 20_000 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(McpClientError);
    expect(error).toMatchObject({ code: 'maybe_executed', retryable: false });
    expect(s.calls).toBe(1);
  });
});

/** A server that answers server/discover with `result` and anything else with 400. */
async function discoverServer(result: unknown): Promise<string> {
  const s = await startHandWritten((msg, res) => {
    if (msg.method === 'server/discover') return sendResult(res, msg.id, result);
    sendJson(res, 400, {
      jsonrpc: '2.0',
      id: msg.id ?? null,
      error: { code: -32022, message: 'Unsupported protocol version' },
    });
  });
  closeAfterAll(s.close);
  return s.url;
}

describe('a server that lies in server/discover', () => {
  it.each([
    ['versions that are not versions', { supportedVersions: [42], capabilities: {}, resultType: 'complete' }],
    [
      'only legacy versions in a discover result',
      { supportedVersions: ['2025-11-25'], capabilities: {}, resultType: 'complete' },
    ],
    ['garbage', 'garbage'],
  ])('gets a typed era_negotiation_failed for %s', async (_why, result) => {
    const url = await discoverServer(result);
    const error = await connectMcp({ url, transport: 'http', connectTimeoutMs: 10_000 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(McpClientError);
    expect((error as McpClientError).code).toBe('era_negotiation_failed');
  });
});

describe('invalidMcpHeaderTools', () => {
  const tool = (name: string, inputSchema: Record<string, unknown>): Tool => ({
    name,
    inputSchema: { type: 'object', ...inputSchema },
  });
  it('names each tool whose x-mcp-header is invalid, and why', () => {
    const tools = [
      tool('ok', { properties: { region: { type: 'string', 'x-mcp-header': 'Region' } } }),
      tool('object', { properties: { where: { type: 'object', 'x-mcp-header': 'Where' } } }),
      tool('spaces', { properties: { a: { type: 'string', 'x-mcp-header': 'Bad Name' } } }),
      tool('twice', {
        properties: { a: { type: 'string', 'x-mcp-header': 'X' }, b: { type: 'string', 'x-mcp-header': 'x' } },
      }),
      tool('nested-in-items', {
        properties: { list: { type: 'array', items: { type: 'string', 'x-mcp-header': 'Item' } } },
      }),
      tool('empty', { properties: { a: { type: 'string', 'x-mcp-header': '' } } }),
    ];
    const invalid = invalidMcpHeaderTools(tools);
    expect(invalid.map((t) => t.name)).toEqual(['object', 'spaces', 'twice', 'nested-in-items', 'empty']);
    for (const entry of invalid) expect(entry.reason.length).toBeGreaterThan(10);
  });

  it('keeps a deep or wide schema, walking it only within its bounds', () => {
    let deep: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 10_000; i += 1) deep = { type: 'object', properties: { n: deep } };
    // 10,000 levels deep, and a broken annotation past the depth the walk looks at: not judged.
    let brokenDeep: Record<string, unknown> = { type: 'object', 'x-mcp-header': 'Bad Name' };
    for (let i = 0; i < 40; i += 1) brokenDeep = { type: 'object', properties: { n: brokenDeep } };
    const wide = {
      properties: Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`p${i}`, { type: 'string' }])),
    };
    expect(invalidMcpHeaderTools([tool('deep', deep), tool('broken-deep', brokenDeep), tool('wide', wide)])).toEqual(
      [],
    );
    // Within the bounds a broken annotation is still found.
    let shallow: Record<string, unknown> = { type: 'object', 'x-mcp-header': 'Bad Name' };
    for (let i = 0; i < 20; i += 1) shallow = { type: 'object', properties: { n: shallow } };
    expect(invalidMcpHeaderTools([tool('broken-shallow', shallow)]).map((t) => t.name)).toEqual(['broken-shallow']);
  });
});
