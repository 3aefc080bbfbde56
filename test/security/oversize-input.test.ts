import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  MAX_REQUEST_BYTES,
  PAYLOAD_LIMITS,
  WireError,
  decodePayload,
  encodePayload,
  type ProxyCallReply,
} from '@mcpx/contracts';
import { startEndpointSystem, type EndpointSystem } from '../endpoint/endpoint-harness.js';
import { MODERN_VERSION, post } from '../endpoint/raw-mcp.js';
import { startTestMcpServer, type TestMcpServer, type TestTool } from '../servers/index.js';

/** Takes any object: only the connector's own bounds can refuse what is sent to it. */
const takeTool: TestTool = {
  name: 'take',
  description: 'Takes anything.',
  inputSchema: { type: 'object' },
  handler: () => ({ content: [{ type: 'text', text: 'taken' }] }),
};

/** `{"deep": [[[…"leaf"…]]]}` as JSON text, `levels` arrays deep (JSON.stringify would recurse). */
const deepJson = (levels: number): string => `{"deep":${'['.repeat(levels)}"leaf"${']'.repeat(levels)}}`;
/** 4 MB of arguments. */
const fourMb = (): Record<string, unknown> => ({ text: 'x'.repeat(4_000_000) });
/**
 * Arguments whose JSON fits the registry's 1 MiB body but whose CBOR does not fit a call request:
 * `1.5,` is 4 bytes of JSON and 9 of CBOR (a 64-bit float).
 */
const floats = (): Record<string, unknown> => ({ f: Array.from({ length: 190_000 }, () => 1.5) });

type Refusal = { code: string; details: Record<string, unknown> };

/**
 * Oversize and too-deep arguments at every face that takes a call (the registry's InvokeTool, the
 * runtime's proxy client over NATS, raw NATS, the agent MCP endpoint): each is `invalid_input`
 * naming `arguments` and the bound it crossed (`details.limit`), nothing reaches the server, and
 * every face keeps serving.
 */
describe('oversize and too-deep arguments are invalid_input naming the bound, at every face', () => {
  let sys: EndpointSystem;
  let upstream: TestMcpServer;
  let agent: string;
  let token: string;

  beforeAll(async () => {
    [sys, upstream] = await Promise.all([
      startEndpointSystem(),
      startTestMcpServer({ era: 'modern', tools: [takeTool] }),
    ]);
    await sys.system.setServer('demo', upstream.url);
    agent = await sys.system.createAgent('ops', ['demo'], 1);
    ({ token } = await sys.token('ops'));
  }, 120_000);

  afterAll(async () => {
    await sys?.stop();
    await upstream?.close();
  });

  const refusalOf = async (run: () => Promise<unknown>): Promise<Refusal> => {
    try {
      await run();
    } catch (err) {
      if (err instanceof WireError) return { code: err.code, details: err.details };
      throw err;
    }
    throw new Error('the call succeeded; a refusal was expected');
  };

  it('the runtime proxy client over NATS: 4 MB, 10,000 levels deep, and more than a call may hold', async () => {
    const before = upstream.stats.calls;
    const call = (args: Record<string, unknown>) => () => sys.system.call('ops', 'r-nats', 'demo__take', args);
    expect(await refusalOf(call(fourMb()))).toMatchObject({
      code: 'invalid_input',
      details: { field: 'arguments', rule: 'size', limit: MAX_REQUEST_BYTES },
    });
    expect(await refusalOf(call(JSON.parse(deepJson(10_000)) as Record<string, unknown>))).toMatchObject({
      code: 'invalid_input',
      details: { field: 'arguments', rule: 'depth', limit: PAYLOAD_LIMITS.maxDepth },
    });
    expect(await refusalOf(call(floats()))).toMatchObject({
      code: 'invalid_input',
      details: { field: 'arguments', rule: 'size', limit: MAX_REQUEST_BYTES },
    });
    expect(upstream.stats.calls).toBe(before);
    expect((await sys.system.call('ops', 'r-nats', 'demo__take', { small: true })).result.text).toBe('taken');
  });

  it('raw NATS: a request nested too deep inside its arguments names arguments, not the request', async () => {
    const before = upstream.stats.calls;
    let deep: unknown = 'leaf';
    for (let i = 0; i < PAYLOAD_LIMITS.maxDepth + 80; i++) deep = [deep];
    const req = {
      account: sys.system.account,
      agent,
      run: 'r-raw',
      callId: 'c1',
      tool: 'demo__take',
      arguments: { deep },
    };
    const reply = decodePayload<ProxyCallReply>(
      (await sys.system.nc.request(sys.system.subjects.proxyCall, encodePayload(req), { timeout: 10_000 })).data,
    );
    expect(reply.ok).toBe(false);
    if (reply.ok) return;
    expect(reply.error).toMatchObject({
      code: 'invalid_input',
      details: { field: 'arguments', rule: 'depth', limit: PAYLOAD_LIMITS.maxDepth },
    });
    expect(upstream.stats.calls).toBe(before);
  });

  it("the registry's InvokeTool: arguments that outgrow a call request, and too deep a body, name the bound", async () => {
    const before = upstream.stats.calls;
    expect(
      await refusalOf(() => sys.system.api.act('InvokeTool', { agent, tool: 'demo__take', arguments: floats() })),
    ).toMatchObject({
      code: 'invalid_input',
      details: { field: 'arguments', rule: 'size', limit: MAX_REQUEST_BYTES },
    });
    const big = await sys.system.api.raw(
      JSON.stringify(sys.system.api.envelope({ type: 'InvokeTool', agent, tool: 'demo__take', arguments: fourMb() })),
    );
    expect(big.body.error).toMatchObject({ code: 'invalid_input', details: { limit: 1024 * 1024 } });
    const deep = await sys.system.api.raw(`{"action":{"type":"InvokeTool","arguments":${deepJson(10_000)}}}`);
    expect(deep.status).toBe(400);
    expect(deep.body.error).toMatchObject({
      code: 'invalid_input',
      details: { field: 'arguments', rule: 'depth', limit: PAYLOAD_LIMITS.maxDepth },
    });
    expect(upstream.stats.calls).toBe(before);
    expect((await sys.system.api.act('InvokeTool', { agent, tool: 'demo__take', arguments: {} })).result.text).toBe(
      'taken',
    );
  });

  it('the agent MCP endpoint: 4 MB and 10,000 levels deep are tool results with invalid_input naming arguments and the bound', async () => {
    const before = upstream.stats.calls;
    const url = sys.urlOf('ops');
    const call = (args: string) =>
      post(
        url,
        token,
        `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"demo__take","arguments":${args},"_meta":{"io.modelcontextprotocol/protocolVersion":"${MODERN_VERSION}","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}}}`,
        {
          'mcp-protocol-version': MODERN_VERSION,
          'mcp-method': 'tools/call',
          'mcp-name': 'demo__take',
        },
      );
    const errorOf = (r: Awaited<ReturnType<typeof call>>): Refusal =>
      (r.result?._meta as Record<string, Refusal> | undefined)?.['io.mcpx/error'] as Refusal;
    const big = await call(JSON.stringify(fourMb()));
    expect(big.status).toBe(200);
    expect(errorOf(big)).toMatchObject({
      code: 'invalid_input',
      details: { field: 'arguments', rule: 'size', limit: MAX_REQUEST_BYTES },
    });
    const deep = await call(deepJson(10_000));
    expect(deep.status).toBe(200);
    expect(errorOf(deep)).toMatchObject({
      code: 'invalid_input',
      details: { field: 'arguments', rule: 'depth', limit: PAYLOAD_LIMITS.maxDepth },
    });
    expect(upstream.stats.calls).toBe(before);
    const fine = await call('{"small":true}');
    expect(JSON.stringify(fine.result?.content)).toContain('taken');
  });
});
