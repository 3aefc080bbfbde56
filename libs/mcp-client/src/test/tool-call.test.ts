import { randomUUID } from 'node:crypto';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CreateMessageResultSchema, ElicitResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { type TestMcpServer, type TestTool } from '../../../../test/servers/index.js';
import { fetchAsRequest } from '../http-request.js';
import {
  inputRequestOf,
  isInputRequired,
  McpClientError,
  type ElicitRequestParams,
  type McpHttpRequest,
} from '../index.js';
import { ASK_OK, clientHarness, confirmTool, text } from './harness.js';
import {
  sendJson,
  sendResult,
  startHandWritten,
  type JsonRpcIn,
} from '../../../../test/support/fixtures/hand-written-mcp.js';

/**
 * The library's one `tools/call` path on the wire: against real SDK servers on loopback where a
 * real server can say it, and against a hand-written server where only a broken one would answer
 * so. (The exact header values, value encodings included, are also held to the official
 * conformance scenarios `http-standard-headers`, `http-custom-headers`, `request-metadata` and
 * `sep-2322-client-request-state`, through `test/conformance/client-harness.ts`.)
 */

const { connect, server, closeAfterAll } = clientHarness();

const modernServer = (tools: TestTool[]): Promise<TestMcpServer> => server({ era: 'modern', tools });

/** A request that records what went through it (the call path's explicit interface). */
function recordingRequest(): {
  request: McpHttpRequest;
  sent: Array<{ method: string; headers: Record<string, string>; body: unknown }>;
} {
  const base = fetchAsRequest(fetch);
  const sent: Array<{ method: string; headers: Record<string, string>; body: unknown }> = [];
  return {
    sent,
    request: async (url, opts) => {
      sent.push({
        method: opts.method,
        headers: opts.headers,
        body: opts.body === undefined ? undefined : (JSON.parse(opts.body) as unknown),
      });
      return await base(url, opts);
    },
  };
}

describe('the modern call path against an SDK v2 server', () => {
  const params: TestTool = {
    name: 'params',
    inputSchema: {
      type: 'object',
      properties: {
        region: { type: 'string', 'x-mcp-header': 'Region' },
        count: { type: 'integer', 'x-mcp-header': 'Count' },
        dry: { type: 'boolean', 'x-mcp-header': 'Dry-Run' },
        nested: { type: 'object', properties: { zone: { type: 'string', 'x-mcp-header': 'Zone' } } },
      },
    },
    handler: (args) => ({ content: [{ type: 'text', text: JSON.stringify(args) }] }),
  };

  it('goes through the given request (not the fetch), and the server accepts every header it checks', async () => {
    const s = await modernServer([params]);
    const rec = recordingRequest();
    const fetched: string[] = [];
    const c = await connect({
      url: s.url,
      request: rec.request,
      fetch: async (input, init) => {
        fetched.push(
          typeof init?.body === 'string' ? ((JSON.parse(init.body) as { method?: string }).method ?? '') : '',
        );
        return await fetch(input, init);
      },
      capabilities: { elicitation: { form: {} } },
      clientInfo: { name: 'wire-test', version: '1.2.3' },
    });
    const tool = (await c.listTools()).find((t) => t.name === 'params');
    // Non-ASCII and padded values go base64 (=?base64?…?=), integers and booleans as text.
    const args = { region: 'Zürich ', count: 42, dry: false, nested: { zone: 'b' } };
    expect(JSON.parse(text(await c.callTool({ name: 'params', arguments: args }, { tool })))).toEqual(args);
    expect(fetched).not.toContain('tools/call');
    const call = rec.sent.find((r) => (r.body as { method?: string }).method === 'tools/call');
    expect(call?.method).toBe('POST');
    expect(call?.headers).toMatchObject({
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': 'params',
      'Mcp-Param-Region': `=?base64?${Buffer.from('Zürich ').toString('base64')}?=`,
      'Mcp-Param-Count': '42',
      'Mcp-Param-Dry-Run': 'false',
      'Mcp-Param-Zone': 'b',
    });
    const meta = (call?.body as { params: { _meta: Record<string, unknown> } }).params._meta;
    expect(meta).toEqual({
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
      'io.modelcontextprotocol/clientInfo': { name: 'wire-test', version: '1.2.3' },
    });
    expect(s.stats.calls).toBe(1);
  });

  it('sends no Mcp-Param header for an absent or null argument, and the server still accepts', async () => {
    const s = await modernServer([params]);
    const rec = recordingRequest();
    const c = await connect({ url: s.url, request: rec.request });
    const tool = (await c.listTools()).find((t) => t.name === 'params');
    await c.callTool({ name: 'params', arguments: { region: null, count: 1 } }, { tool });
    const headers = rec.sent.find((r) => (r.body as { method?: string }).method === 'tools/call')?.headers ?? {};
    expect(Object.keys(headers).filter((h) => h.startsWith('Mcp-Param-'))).toEqual(['Mcp-Param-Count']);
  });

  it('hands an input_required result back, and the retry carries inputResponses and requestState', async () => {
    const s = await modernServer([confirmTool({ requestState: 'opaque-1' })]);
    const rec = recordingRequest();
    const c = await connect({ url: s.url, request: rec.request, capabilities: { elicitation: { form: {} } } });
    const first = await c.callTool({ name: 'confirm', arguments: {} });
    expect(inputRequestOf(first)).toEqual({ kind: 'input_required', inputRequests: ASK_OK, requestState: 'opaque-1' });
    await c.callTool(
      { name: 'confirm', arguments: {} },
      { inputResponses: { ok: { action: 'accept', content: { ok: true } } }, requestState: 'opaque-1' },
    );
    const calls = rec.sent
      .filter((r) => (r.body as { method?: string }).method === 'tools/call')
      .map((r) => r.body as { id: string; params: Record<string, unknown> });
    expect(calls).toHaveLength(2);
    expect(calls[0]?.params).not.toHaveProperty('inputResponses');
    expect(calls[1]?.params).toMatchObject({
      inputResponses: { ok: { action: 'accept', content: { ok: true } } },
      requestState: 'opaque-1',
    });
    expect(calls[1]?.id).not.toBe(calls[0]?.id);
    expect(inputRequestOf({ content: [] })).toBeUndefined();
  });
});

type Answer = (msg: JsonRpcIn, res: ServerResponse) => void;

/**
 * A hand-written modern server: `server/discover` is answered properly, `tools/call` by `answer`
 * (what only a broken or hostile server would send).
 */
async function handWritten(answer: Answer): Promise<{ url: string }> {
  const s = await startHandWritten((msg, res) => {
    if (msg.method === 'server/discover')
      return sendResult(res, msg.id, {
        resultType: 'complete',
        supportedVersions: ['2026-07-28'],
        capabilities: { tools: {} },
        serverInfo: { name: 'hand', version: '0' },
      });
    if (msg.method === 'tools/call') return answer(msg, res);
    res.writeHead(405).end();
  });
  closeAfterAll(s.close);
  return s;
}

const json = sendJson;

describe('the modern call path against a server that answers badly', () => {
  it.each([
    ['an unknown resultType', { resultType: 'task', content: [] }, /unsupported resultType "task"/],
    ['a resultType that is not a string', { resultType: 7, content: [] }, /resultType that is not a string/],
    [
      'input_required with neither inputRequests nor requestState',
      { resultType: 'input_required' },
      /neither inputRequests nor requestState/,
    ],
    ['content that is not an array', { resultType: 'complete', content: 'hi' }, /content is not an array/],
  ])('%s is a protocol_error, not a result', async (_what, result, message) => {
    const s = await handWritten((msg, res) => json(res, 200, { jsonrpc: '2.0', id: msg.id, result }));
    const c = await connect({ url: s.url });
    const err = await c.callTool({ name: 't', arguments: {} }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(McpClientError);
    expect((err as McpClientError).code).toBe('protocol_error');
    expect((err as McpClientError).message).toMatch(message);
  });

  it('a result without resultType is complete (SEP-2322)', async () => {
    const s = await handWritten((msg, res) =>
      json(res, 200, { jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text', text: 'plain' }] } }),
    );
    const c = await connect({ url: s.url });
    expect(text(await c.callTool({ name: 't', arguments: {} }))).toBe('plain');
  });

  it('an HTTP 400 whose body is the JSON-RPC error to our request is that server error (protocol_error with its code)', async () => {
    const s = await handWritten((msg, res) =>
      json(res, 400, {
        jsonrpc: '2.0',
        id: msg.id,
        error: { code: -32020, message: 'Mcp-Param-Region does not match arguments.region' },
      }),
    );
    const c = await connect({ url: s.url });
    const err = await c.callTool({ name: 't', arguments: {} }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'protocol_error', mcpCode: -32020 });
    expect((err as Error).message).toContain('Mcp-Param-Region does not match');
  });

  it('an HTTP 400 whose body is not the error to our request stays an HTTP error (transport_error, status 400)', async () => {
    const s = await handWritten((_msg, res) =>
      json(res, 400, { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'nope' } }),
    );
    const c = await connect({ url: s.url });
    const err = await c.callTool({ name: 't', arguments: {} }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'transport_error', status: 400 });
  });

  it('a 401 names the server challenge of that very response', async () => {
    const s = await handWritten((_msg, res) => {
      res.writeHead(401, {
        'www-authenticate': 'Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource"',
      });
      res.end();
    });
    const c = await connect({ url: s.url });
    const err = await c.callTool({ name: 't', arguments: {} }).catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: 'unauthorized',
      wwwAuthenticate: 'Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource"',
    });
  });

  it('reads progress off the response stream, and the result after it', async () => {
    const s = await handWritten((msg, res) => {
      const token = (msg.params as { _meta?: { progressToken?: unknown } })._meta?.progressToken;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(
        `data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress: 1, total: 2 } })}\n\n`,
      );
      res.write(
        `data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'someone-else', progress: 9 } })}\n\n`,
      );
      res.end(
        `data: ${JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { resultType: 'complete', content: [{ type: 'text', text: 'done' }] } })}\n\n`,
      );
    });
    const c = await connect({ url: s.url });
    const progress: unknown[] = [];
    expect(text(await c.callTool({ name: 't', arguments: {} }, { onProgress: (p) => progress.push(p) }))).toBe('done');
    expect(progress).toEqual([{ progress: 1, total: 2 }]);
  });

  it('a stream that ends before the result is maybe_executed, never retried', async () => {
    let calls = 0;
    const s = await handWritten((msg, res) => {
      calls += 1;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(
        `data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: msg.id } })}\n\n`,
      );
    });
    const c = await connect({ url: s.url });
    const err = await c.callTool({ name: 't', arguments: {} }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'maybe_executed', retryable: false });
    expect(calls).toBe(1);
  });
});

/**
 * An SDK v1 (2025-11-25) server whose tool asks the client with elicitation/create, schema
 * defaults included: `related` sends it on the call's own response stream (`extra.sendRequest`),
 * otherwise on the session's GET stream (`server.elicitInput`, as the conformance scenario does).
 */
async function elicitingLegacyServer(related = true): Promise<{ url: string; asked: () => number }> {
  let asked = 0;
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const build = (): McpServer => {
    const server = new McpServer({ name: 'eliciting', version: '0' });
    server.registerTool('profile', { description: 'asks for a profile' }, async (extra) => {
      asked += 1;
      const params = {
        message: 'Your profile',
        requestedSchema: {
          type: 'object' as const,
          properties: {
            name: { type: 'string' as const, default: 'John Doe' },
            age: { type: 'integer' as const, default: 30 },
            verified: { type: 'boolean' as const, default: true },
            note: { type: 'string' as const },
          },
        },
      };
      const answer = related
        ? await extra.sendRequest({ method: 'elicitation/create', params }, ElicitResultSchema)
        : await server.server.elicitInput(params);
      return { content: [{ type: 'text', text: JSON.stringify(answer) }] };
    });
    // Sampling the 2025 way: the server asks the client's model for a message.
    server.registerTool('summarize', { description: "asks the client's model for a summary" }, async (extra) => {
      asked += 1;
      const params = {
        messages: [{ role: 'user' as const, content: { type: 'text' as const, text: 'Summarize: a long diff' } }],
        maxTokens: 50,
      };
      const answer = related
        ? await extra.sendRequest({ method: 'sampling/createMessage', params }, CreateMessageResultSchema)
        : await server.server.createMessage(params);
      return { content: [{ type: 'text', text: JSON.stringify(answer) }] };
    });
    return server;
  };
  const srv = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      void (async () => {
        const body = raw === '' ? undefined : (JSON.parse(raw) as unknown);
        const id = req.headers['mcp-session-id'];
        let transport = typeof id === 'string' ? transports.get(id) : undefined;
        if (transport === undefined) {
          const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
            sessionIdGenerator: randomUUID,
            onsessioninitialized: (sid) => void transports.set(sid, created),
          });
          transport = created;
          await build().connect(created);
        }
        await transport.handleRequest(req, res, body);
      })();
    });
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  closeAfterAll(async () => {
    await Promise.all([...transports.values()].map(async (t) => await t.close()));
    srv.closeAllConnections();
    await new Promise<void>((resolve) => srv.close(() => resolve()));
  });
  return { url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}/mcp`, asked: () => asked };
}

describe('a legacy server that elicits during a call', () => {
  it('reaches the onElicitation handler; an accepted form gets the schema defaults for the fields left out (SEP-1034)', async () => {
    const s = await elicitingLegacyServer();
    const asked: ElicitRequestParams[] = [];
    const rec = recordingRequest();
    const c = await connect({
      url: s.url,
      request: rec.request,
      onElicitation: async (params) => {
        asked.push(params);
        return { action: 'accept', content: { name: 'Ada' } };
      },
    });
    expect(c.era).toBe('legacy');
    const answer = JSON.parse(text(await c.callTool({ name: 'profile', arguments: {} }))) as {
      action: string;
      content: Record<string, unknown>;
    };
    expect(answer).toEqual({ action: 'accept', content: { name: 'Ada', age: 30, verified: true } });
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatchObject({ message: 'Your profile' });
    // The call and the answer went on the call path's own request, on the session.
    const bodies = rec.sent.map((r) => r.body as { method?: string; result?: unknown });
    expect(bodies.map((b) => b.method ?? 'response')).toEqual(['tools/call', 'response']);
    expect(bodies[1]?.result).toEqual({ action: 'accept', content: { name: 'Ada', age: 30, verified: true } });
    expect(rec.sent[1]?.headers['mcp-session-id']).toBe(rec.sent[0]?.headers['mcp-session-id']);
  });

  it('on the session GET stream (not related to the call), reaches the same handler with the same defaults', async () => {
    const s = await elicitingLegacyServer(false);
    const c = await connect({ url: s.url, onElicitation: async () => ({ action: 'accept', content: {} }) });
    expect(JSON.parse(text(await c.callTool({ name: 'profile', arguments: {} })))).toEqual({
      action: 'accept',
      content: { name: 'John Doe', age: 30, verified: true },
    });
  });

  it('a handler that declines or throws answers the server so (the call goes on)', async () => {
    const s = await elicitingLegacyServer();
    const declined = await connect({ url: s.url, onElicitation: async () => ({ action: 'decline' }) });
    expect(JSON.parse(text(await declined.callTool({ name: 'profile', arguments: {} })))).toEqual({
      action: 'decline',
    });
    const failing = await connect({
      url: s.url,
      onElicitation: async () => {
        throw new Error('nobody to ask');
      },
    });
    const result = await failing.callTool({ name: 'profile', arguments: {} });
    expect((result as { isError?: boolean }).isError).toBe(true);
    expect(text(result)).toContain('nobody to ask');
  });

  it("a pushed sampling/createMessage reaches the onSampling handler, on the call's own stream and on the GET stream; a malformed answer is refused to the server", async () => {
    const sampled = {
      role: 'assistant',
      content: { type: 'text', text: 'it is long' },
      model: 'test-model',
      stopReason: 'endTurn',
    };
    for (const related of [true, false]) {
      const s = await elicitingLegacyServer(related);
      const asked: unknown[] = [];
      const rec = recordingRequest();
      const c = await connect({
        url: s.url,
        request: rec.request,
        onSampling: async (params) => {
          asked.push(params);
          return sampled as never;
        },
      });
      expect(JSON.parse(text(await c.callTool({ name: 'summarize', arguments: {} })))).toEqual(sampled);
      expect(asked).toEqual([
        { messages: [{ role: 'user', content: { type: 'text', text: 'Summarize: a long diff' } }], maxTokens: 50 },
      ]);
      // On the call's own stream the answer goes back on the call path's own request, on the session.
      if (related)
        expect(rec.sent.map((r) => (r.body as { method?: string }).method ?? 'response')).toEqual([
          'tools/call',
          'response',
        ]);
    }
    const s = await elicitingLegacyServer();
    const malformed = await connect({
      url: s.url,
      onSampling: async () => ({ role: 'assistant', content: { type: 'text', text: 'x' } }) as never,
    });
    const result = await malformed.callTool({ name: 'summarize', arguments: {} });
    expect((result as { isError?: boolean }).isError).toBe(true);
    expect(text(result)).toMatch(/sampling result/i);
    // Without a handler (and no sampling declared) the server cannot ask.
    const none = await connect({ url: s.url });
    expect(((await none.callTool({ name: 'summarize', arguments: {} })) as { isError?: boolean }).isError).toBe(true);
  });

  it('without a handler declares no elicitation: the server cannot ask, and says so', async () => {
    const s = await elicitingLegacyServer();
    const c = await connect({ url: s.url });
    const result = await c.callTool({ name: 'profile', arguments: {} });
    expect(isInputRequired(result)).toBe(false);
    expect((result as { isError?: boolean }).isError).toBe(true);
    expect(text(result)).toMatch(/elicitation/i);
  });
});
