import { createServer as createHttpServer } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  bigTextTool,
  defaultTools,
  echoTool,
  errorTool,
  freePort,
  imageTool,
  slowTool,
  startTestMcpServer,
  structuredTool,
  type TestMcpServer,
  type TestTool,
} from '../../../../test/servers/index.js';
import { connectMcp, isInputRequired, McpClientError, type CallToolResult, type McpCallResult } from '../index.js';
import { clientHarness } from './harness.js';

const { server, connect } = clientHarness();

async function connectError(opts: Parameters<typeof connectMcp>[0]): Promise<McpClientError> {
  const error: unknown = await connectMcp({ connectTimeoutMs: 10_000, ...opts }).then(
    async (c) => {
      await c.close();
      throw new Error('expected the connect to fail');
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(McpClientError);
  return error as McpClientError;
}

/** A fetch that records method and URL of every request it makes. */
function recordingFetch(): { fetch: typeof fetch; requests: string[] } {
  const requests: string[] = [];
  return {
    requests,
    fetch: async (input, init) => {
      const url = input instanceof Request ? input.url : String(input);
      requests.push(`${init?.method ?? 'GET'} ${new URL(url).pathname}`);
      return await fetch(input, init);
    },
  };
}

/** The result as a complete one (an `input_required` one fails the test). */
function complete(result: McpCallResult): CallToolResult {
  if (isInputRequired(result)) throw new Error(`expected a complete result, got ${JSON.stringify(result)}`);
  return result;
}

/** The first system error code (`ECONNREFUSED`, …) along `err`'s causes (an aggregate's first error included). */
function causeCode(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 8; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return code;
    e = e instanceof AggregateError && e.errors.length > 0 ? e.errors[0] : e.cause;
  }
  return undefined;
}

function text(result: McpCallResult): string {
  return complete(result)
    .content.map((c) => ((c as { type: string }).type === 'text' ? (c as { text: string }).text : ''))
    .join('');
}

async function waitFor(condition: () => boolean, ms = 5_000, tick?: () => void): Promise<void> {
  const endsAt = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > endsAt) throw new Error('condition not met in time');
    tick?.();
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe.each(['legacy', 'modern'] as const)('connectMcp over Streamable HTTP, a %s server', (era) => {
  let s: TestMcpServer;
  beforeAll(async () => {
    s = await server({
      era,
      tools: [
        ...defaultTools(),
        bigTextTool(1024 * 1024),
        structuredTool(),
        slowTool(10_000),
        errorTool(),
        imageTool(),
      ],
    });
  });

  it('connects, lists and calls', async () => {
    const c = await connect({ url: s.url });
    expect(c.transport).toBe('http');
    expect(c.serverInfo?.name).toBe('mcpx-test-server');
    expect(c.closed).toBe(false);
    const tools = await c.listTools();
    expect(tools.map((t) => t.name)).toEqual(['echo', 'add', 'big_text', 'structured', 'slow', 'fail', 'image']);
    expect(tools[1]?.annotations).toEqual({ readOnlyHint: true });
    const echoed = await c.callTool({ name: 'echo', arguments: { text: 'hi' } });
    expect(text(echoed)).toBe('echo: hi');
    const added = await c.callTool({ name: 'add', arguments: { a: 2, b: 3 } });
    expect(added.structuredContent).toEqual({ sum: 5 });
    await c.close();
    expect(c.closed).toBe(true);
    await expect(c.callTool({ name: 'echo', arguments: { text: 'x' } })).rejects.toMatchObject({
      code: 'transport_error',
    });
  });

  it('returns a 1 MiB text result whole', async () => {
    const c = await connect({ url: s.url, transport: 'http' });
    const result = await c.callTool({ name: 'big_text', arguments: {} });
    expect(text(result)).toHaveLength(1024 * 1024);
  });

  it('passes structuredContent through even when it disagrees with the outputSchema', async () => {
    const c = await connect({ url: s.url });
    const tools = await c.listTools(); // the SDK's callTool would now validate against the cached outputSchema
    const result = await c.callTool({ name: 'structured', arguments: {} });
    expect(result.structuredContent).toEqual({ count: 'three' });
    // Given the listed definition (for Mcp-Param-* mirroring), its outputSchema is still not applied.
    const tool = tools.find((t) => t.name === 'structured');
    expect(tool?.outputSchema).toBeDefined();
    expect((await c.callTool({ name: 'structured', arguments: {} }, { tool })).structuredContent).toEqual({
      count: 'three',
    });
  });

  it('returns isError results and image content instead of throwing', async () => {
    const c = await connect({ url: s.url });
    const failed = await c.callTool({ name: 'fail', arguments: {} });
    expect(failed.isError).toBe(true);
    expect(text(failed)).toBe('the tool failed');
    const image = await c.callTool({ name: 'image', arguments: {} });
    expect(complete(image).content.map((part) => part.type)).toEqual(['text', 'image']);
  });

  it('tells a timeout from a cancel', async () => {
    const c = await connect({ url: s.url });
    const timedOut = await c.callTool({ name: 'slow', arguments: {} }, { timeoutMs: 200 }).catch((e: unknown) => e);
    expect(timedOut).toMatchObject({ code: 'timeout', retryable: false });

    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const cancelled = await c
      .callTool({ name: 'slow', arguments: {} }, { signal: controller.signal })
      .catch((e: unknown) => e);
    expect(cancelled).toMatchObject({ code: 'cancelled', retryable: false });

    // The connection stays usable.
    expect(text(await c.callTool({ name: 'echo', arguments: { text: 'after' } }))).toBe('echo: after');
  });

  it('does not flood MaxListenersExceededWarning under many calls', async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error): void => {
      if (warning.name === 'MaxListenersExceededWarning') warnings.push(warning.message);
    };
    process.on('warning', onWarning);
    try {
      const c = await connect({ url: s.url });
      for (let batch = 0; batch < 20; batch += 1) {
        await Promise.all(
          Array.from(
            { length: 100 },
            async (_, i) => await c.callTool({ name: 'echo', arguments: { text: String(i) } }),
          ),
        );
      }
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings).toEqual([]);
  });
});

describe('transport selection', () => {
  it('falls back to SSE when Streamable HTTP answers a 4xx', async () => {
    const s = await server({ transport: 'sse' });
    const recorded = recordingFetch();
    const c = await connect({ url: s.url, fetch: recorded.fetch });
    expect(c.transport).toBe('sse');
    expect(recorded.requests[0]).toBe('POST /sse');
    expect(recorded.requests).toContain('GET /sse');
    expect(text(await c.callTool({ name: 'echo', arguments: { text: 'legacy' } }))).toBe('echo: legacy');
    expect((await c.listTools()).map((t) => t.name)).toEqual(['echo', 'add']);
    expect(s.stats.handshakes).toBe(1);
  });

  it('does not fall back when the transport is pinned', async () => {
    const s = await server({ transport: 'sse' });
    const error = await connectError({ url: s.url, transport: 'http' });
    expect(error.code).toBe('connect_failed');
    expect(error.status).toBe(405);
  });

  it('reports ECONNREFUSED when nothing listens, without trying SSE', async () => {
    const port = await freePort();
    const recorded = recordingFetch();
    const error = await connectError({ url: `http://127.0.0.1:${port}/mcp`, fetch: recorded.fetch });
    expect(error.code).toBe('connect_failed');
    expect(error.retryable).toBe(false);
    expect(error.message).toContain(`connect ECONNREFUSED 127.0.0.1:${port}`);
    expect(recorded.requests).toEqual(['POST /mcp']);

    const sse = await connectError({ url: `http://127.0.0.1:${port}/sse`, transport: 'sse' });
    expect(sse.code).toBe('connect_failed');
    expect(sse.message).toContain(`connect ECONNREFUSED 127.0.0.1:${port}`);
  });

  it('reports a name that does not resolve as connect_failed with its socket code, decided by the code', async () => {
    const error = await connectError({ url: 'http://mcpx-no-such-host.invalid/mcp', transport: 'http' });
    expect(error.code).toBe('connect_failed');
    // ENOTFOUND, or EAI_AGAIN where no resolver answers: either is the name's failure, by code.
    expect(['ENOTFOUND', 'EAI_AGAIN']).toContain(error.details.socketCode);
    expect(error.ran).toBe('none');
  });

  it('takes what the fetch rejected with as the network failure whatever its words (a TypeError, by the Fetch standard)', async () => {
    const s = await server();
    // Another runtime's words for a network error: nothing in them says "fetch failed".
    const refusing = (() => Promise.reject(new TypeError('Load failed'))) as typeof fetch;
    const error = await connectError({ url: s.url, transport: 'http', fetch: refusing });
    expect(error.code).toBe('connect_failed');
    expect(error.message).toContain('Load failed');
  });

  it('does not fall back on a 5xx', async () => {
    const failing = createHttpServer((_req, res) => {
      res.writeHead(503, { 'content-type': 'text/plain' }).end('maintenance');
    });
    await new Promise<void>((resolve) => failing.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = failing.address() as AddressInfo;
      const recorded = recordingFetch();
      const error = await connectError({ url: `http://127.0.0.1:${port}/mcp`, fetch: recorded.fetch });
      expect(error).toMatchObject({ code: 'connect_failed', status: 503 });
      expect(error.message).toContain('HTTP 503 (maintenance)');
      expect(recorded.requests).toEqual(['POST /mcp']);
    } finally {
      failing.closeAllConnections();
      await new Promise((resolve) => failing.close(resolve));
    }
  });

  it('reports the Streamable HTTP error when both transports fail', async () => {
    const s = await server();
    const error = await connectError({ url: s.url.replace('/mcp', '/nowhere') });
    expect(error.code).toBe('connect_failed');
    expect(error.status).toBe(404);
    expect(error.details.transport).toBe('http');
    expect(error.details.fallbackError).toContain('SSE');
  });

  it('reports a connect aborted by the caller as cancelled', async () => {
    const s = await server();
    const error = await connectError({ url: s.url, signal: AbortSignal.abort() });
    expect(error.code).toBe('cancelled');
  });

  it('times out a connect to a server that never answers', async () => {
    const sockets = new Set<Socket>();
    const silent = createTcpServer((socket) => sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const address = silent.address() as AddressInfo;
      const error = await connectError({ url: `http://127.0.0.1:${address.port}/mcp`, connectTimeoutMs: 300 });
      expect(error.code).toBe('timeout');
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});

describe('authentication', () => {
  it('sends a header the server requires', async () => {
    const s = await server({ requireHeader: { name: 'Authorization', value: 'Bearer s3cret-token' } });
    const c = await connect({ url: s.url, headers: { Authorization: 'Bearer s3cret-token' } });
    expect(text(await c.callTool({ name: 'echo', arguments: { text: 'authed' } }))).toBe('echo: authed');
  });

  it('maps a 401 to unauthorized, never falls back, and keeps header values out of the message', async () => {
    const s = await server({ transport: 'both', requireHeader: { name: 'X-Api-Key', value: 'right-key' } });
    const recorded = recordingFetch();
    const error = await connectError({
      url: `${s.url}?token=query-secret`,
      headers: { 'X-Api-Key': 'wrong-key-value' },
      fetch: recorded.fetch,
    });
    expect(error.code).toBe('unauthorized');
    expect(error.status).toBe(401);
    expect(recorded.requests).toEqual(['POST /mcp']);
    expect(error.message).not.toContain('wrong-key-value');
    expect(error.message).not.toContain('query-secret');
    expect(s.stats.handshakes).toBe(0);
  });

  it('exposes the WWW-Authenticate challenge of an OAuth-protected server', async () => {
    const s = await server({ requireBearerWithOAuthMetadata: true });
    const error = await connectError({ url: s.url });
    expect(error.code).toBe('unauthorized');
    expect(error.wwwAuthenticate).toBe(
      `Bearer resource_metadata="http://127.0.0.1:${s.port}/.well-known/oauth-protected-resource/mcp"`,
    );
    expect(error.details.wwwAuthenticate).toBe(error.wwwAuthenticate);
  });
});

describe('tools/list', () => {
  const many: TestTool[] = Array.from({ length: 7 }, (_, i) => ({ ...echoTool(), name: `tool_${i}` }));

  it.each(['legacy', 'modern'] as const)('follows nextCursor over 3 pages (%s)', async (era) => {
    const s = await server({ era, tools: many, pageSize: 3 });
    const c = await connect({ url: s.url });
    const before = s.stats.listCalls;
    const tools = await c.listTools();
    expect(tools.map((t) => t.name)).toEqual(many.map((t) => t.name));
    expect(s.stats.listCalls - before).toBe(3);
  });

  it.each(['legacy', 'modern'] as const)('stops at maxPages and on a cursor loop (%s)', async (era) => {
    const s = await server({ era, tools: many, pageSize: 3, cursorLoop: true });
    const c = await connect({ url: s.url });
    const before = s.stats.listCalls;
    const tools = await c.listTools();
    expect(tools.map((t) => t.name)).toEqual(['tool_0', 'tool_1', 'tool_2']);
    expect(s.stats.listCalls - before).toBe(2);

    const bounded = await server({ era, tools: many, pageSize: 1 });
    const c2 = await connect({ url: bounded.url });
    expect(await c2.listTools({ maxPages: 2 })).toHaveLength(2);
  });

  it('forwards tools/list_changed', async () => {
    const s = await server();
    let changed = 0;
    const c = await connect({ url: s.url, onToolsListChanged: () => (changed += 1) });
    const next = [...defaultTools(), { ...echoTool(), name: 'echo2' }];
    // The GET stream that carries notifications opens after the handshake: resend until it is there.
    await waitFor(
      () => changed > 0,
      5_000,
      () => s.setTools(next),
    );
    expect((await c.listTools()).map((t) => t.name)).toContain('echo2');
  });
});

describe.each([404, 400] as const)('upstream restart, lost sessions answered %i', (lostSession) => {
  it('reports session_expired (retryable) after a restart, and a reconnect works', async () => {
    const first = await startTestMcpServer({ lostSession });
    const port = first.port;
    const c = await connect({ url: first.url });
    expect(text(await c.callTool({ name: 'echo', arguments: { text: '1' } }))).toBe('echo: 1');
    await first.close();

    // The first calls may reuse a kept-alive socket the server just closed ("other side closed").
    let down: unknown;
    await waitFor(
      () => causeCode(down) === 'ECONNREFUSED',
      5_000,
      () => {
        c.callTool({ name: 'echo', arguments: { text: '2' } }).then(
          () => {
            down = new Error('the call succeeded on a closed server');
          },
          (e: unknown) => {
            down = e;
          },
        );
      },
    );
    expect(down).toMatchObject({ code: 'transport_error', retryable: false });
    expect((down as Error).message).toContain(`connect ECONNREFUSED 127.0.0.1:${port}`);

    const second = await server({ port, lostSession });
    const expired = await c.callTool({ name: 'echo', arguments: { text: '3' } }).catch((e: unknown) => e);
    expect(expired).toMatchObject({ code: 'session_expired', retryable: true, status: lostSession });
    expect(second.stats.calls).toBe(0);

    const fresh = await connect({ url: second.url });
    expect(text(await fresh.callTool({ name: 'echo', arguments: { text: '4' } }))).toBe('echo: 4');
  });
});
