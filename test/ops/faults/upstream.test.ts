/**
 * Faults of the remote MCP server, against the services as processes:
 * - restarted mid-run: the next call of the run makes one fresh handshake, nothing runs twice;
 * - accepts and never answers: the call ends at its own timeout with `timeout`, the discovery at
 *   its deadline with a status naming it, the proxy serves the next call of another server;
 * - streams forever (endless events on the call's answer): the call is cut, the proxy serves on;
 * - lists 100,000 tools: the discovery keeps the first 1,000 (one page) or stops at 50 pages, the
 *   registry answers on, the agent gets a bounded tool set.
 * Each prints what the user sees and the recovery time (docs/operations.md has the lines).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HostileBody, startHostileMcpServer, type HostileMcpServer } from '../../servers/hostile-mcp-server.js';
import { echoTool, startTestMcpServer, type TestMcpServer, type TestTool } from '../../servers/index.js';
import { startFaultyFront, type FaultyFront } from '../support/faulty-front.js';
import { Stack, until } from '../support/stack.js';

/** `count {}` executes once per call it is handed: the executions are the ground truth of "no double execution". */
function countingTool(executions: { n: number }, holdMs = 0): TestTool {
  return {
    name: 'count',
    description: 'Counts its executions.',
    inputSchema: { type: 'object', properties: { hold: { type: 'boolean' } } },
    handler: async (args) => {
      executions.n++;
      if (args['hold'] === true) await new Promise((r) => setTimeout(r, holdMs));
      return { content: [{ type: 'text', text: `execution ${executions.n}` }] };
    },
  };
}

function report(line: string): void {
  process.stdout.write(`fault: ${line}\n`);
}

describe.each(['legacy', 'modern'] as const)('an upstream (%s) restarted mid-run', (era) => {
  let stack: Stack;
  let upstream: TestMcpServer;
  const executions = { n: 0 };
  let agent: string;

  beforeAll(async () => {
    [stack, upstream] = await Promise.all([
      Stack.start(),
      startTestMcpServer({ era, tools: [countingTool(executions, 1_500), echoTool()] }),
    ]);
    await stack.setServer('up', upstream.url);
    agent = await stack.createAgent('agent', ['up'], 2);
  });

  afterAll(async () => {
    await upstream?.close();
    await stack?.stop();
  });

  it('the call in flight fails once (never re-sent), the next call of the run makes one fresh handshake and runs once', async () => {
    const run = `run-${era}`;
    expect((await stack.call(agent, run, 'up__count')).result.text).toBe('execution 1');
    // A call held by the server when it dies.
    const inFlight = stack.call(agent, run, 'up__count', { hold: true }).then(
      () => undefined,
      (e: unknown) => e,
    );
    await until(async () => (executions.n === 2 ? true : undefined), 20_000, 'the held call to reach the server');
    const port = upstream.port;
    await upstream.close();
    const err = (await inFlight) as { code?: string; message?: string } | undefined;
    // What the user sees: a typed error (the server went away mid-call), not a hang or a retry.
    expect(err, 'the in-flight call failed').toBeDefined();
    // The call reached the server: never the retryable transport_error (which says nothing ran).
    expect(['server_error', 'maybe_executed']).toContain(err?.code);
    report(`upstream ${era} killed mid-call: the caller sees ${err?.code ?? '?'} (${err?.message ?? ''})`);

    const restartedAt = Date.now();
    upstream = await startTestMcpServer({ era, port, tools: [countingTool(executions, 1_500), echoTool()] });
    const next = await stack.call(agent, run, 'up__count');
    const recoveryMs = Date.now() - restartedAt;
    expect(next.result.text).toBe('execution 3');
    // One fresh handshake on the restarted server for a legacy session; none for a modern one.
    expect(upstream.stats.handshakes).toBe(era === 'legacy' ? 1 : 0);
    expect(upstream.stats.calls).toBe(1);
    // Nothing ran twice: three calls handed over, three executions (the held one was not re-sent).
    await new Promise((r) => setTimeout(r, 500));
    expect(executions.n).toBe(3);
    report(
      `upstream ${era} restarted: next call of the run ok in ${recoveryMs} ms, ${upstream.stats.handshakes} handshake, 0 double executions`,
    );
  });
});

describe('an upstream that accepts and never answers', () => {
  let stack: Stack;
  let upstream: TestMcpServer;
  let healthy: TestMcpServer;
  let front: FaultyFront;
  let agent: string;

  beforeAll(async () => {
    [stack, upstream, healthy] = await Promise.all([
      Stack.start({ env: { DISCOVERY_DEADLINE_MS: '3000' } }),
      startTestMcpServer({ era: 'legacy', tools: [echoTool()] }),
      startTestMcpServer({ era: 'modern', tools: [echoTool()] }),
    ]);
    front = await startFaultyFront({ port: upstream.port });
    await stack.setServer('silent', front.url('/mcp'));
    await stack.setServer('fine', healthy.url);
    agent = await stack.createAgent('agent', ['silent', 'fine'], 2);
  });

  afterAll(async () => {
    await front?.close();
    await Promise.all([upstream?.close(), healthy?.close()]);
    await stack?.stop();
  });

  it('a call ends at its own timeout with `timeout`; other servers and runs are served meanwhile', async () => {
    front.mode = 'blackhole';
    front.cut();
    const started = Date.now();
    const pending = stack.callError(agent, 'silent-run', 'silent__echo', { text: 'x' }, { timeoutMs: 2_000 });
    // Meanwhile, the same proxy answers another server at once.
    expect((await stack.call(agent, 'other-run', 'fine__echo', { text: 'y' })).result.text).toBe('echo: y');
    const err = await pending;
    const tookMs = Date.now() - started;
    expect(err.code).toBe('timeout');
    expect(err.message).not.toMatch(/undefined/);
    expect(tookMs).toBeLessThan(30_000);
    report(`upstream accepts and never answers: the call ends with timeout after ${tookMs} ms (its timeoutMs 2000)`);
  });

  it('a refresh ends at the discovery deadline with a status that names it; the last good tools are kept', async () => {
    front.mode = 'blackhole';
    front.cut();
    const started = Date.now();
    const { server } = await stack.api.act<{ server: { status: { state: string; error?: string }; tools: unknown[] } }>(
      'RefreshMcpServer',
      { name: 'silent' },
    );
    const tookMs = Date.now() - started;
    expect(server.status.state).toBe('error');
    expect(server.status.error).toMatch(/deadline|timed out|timeout/i);
    expect(server.tools.length).toBe(1);
    report(
      `upstream never answers a discovery: RefreshMcpServer returns in ${tookMs} ms, status error "${server.status.error ?? ''}", last good tools kept`,
    );
  });

  it('recovers as soon as the server answers again', async () => {
    front.mode = 'pass';
    front.cut();
    const started = Date.now();
    const ok = await until(
      async () =>
        (
          await stack
            .call(agent, `again-${Date.now()}`, 'silent__echo', { text: 'z' }, { timeoutMs: 5_000 })
            .catch(() => undefined)
        )?.result.text,
      30_000,
      'a call through the healed front',
    );
    expect(ok).toBe('echo: z');
    report(`upstream answers again: first call ok after ${Date.now() - started} ms`);
  });
});

describe('an upstream that streams forever, and one that lists 100,000 tools', () => {
  let stack: Stack;
  let hostile: HostileMcpServer;
  let huge: TestMcpServer;
  let paged: TestMcpServer;
  const manyTools = (n: number): TestTool[] =>
    Array.from({ length: n }, (_, i) => ({
      name: `t${i}`,
      description: `tool ${i}`,
      inputSchema: { type: 'object' },
      handler: () => ({ content: [{ type: 'text' as const, text: String(i) }] }),
    }));

  beforeAll(async () => {
    [stack, hostile, huge, paged] = await Promise.all([
      Stack.start(),
      startHostileMcpServer(),
      startTestMcpServer({ era: 'legacy', tools: manyTools(100_000) }),
      startTestMcpServer({ era: 'legacy', tools: manyTools(100_000), pageSize: 1_000 }),
    ]);
  }, 120_000);

  afterAll(async () => {
    await Promise.all([hostile?.close(), huge?.close(), paged?.close()]);
    await stack?.stop();
  });

  it('endless events as a call answer: the call is cut with a typed error, the proxy serves the same server on', async () => {
    await stack.setServer('forever', hostile.url(HostileBody.endlessEvents, 'call'));
    const agent = await stack.createAgent('streamer', ['forever'], 2);
    const started = Date.now();
    const err = await stack.callError(agent, 'r', 'forever__fetch_data', {}, { timeoutMs: 20_000 });
    const tookMs = Date.now() - started;
    expect(['maybe_executed', 'server_error', 'timeout']).toContain(err.code);
    expect(err.retryable).toBe(false);
    expect(JSON.stringify((await stack.call(agent, 'r2', 'forever__ping')).result)).toContain('pong');
    report(
      `upstream streams forever: the call ends with ${err.code} after ${tookMs} ms ("${err.message}"), next call ok`,
    );
  }, 60_000);

  it.each([
    ['one page', 'huge'],
    ['1,000-tool pages', 'paged'],
  ] as const)(
    '100,000 tools in %s: the discovery is bounded, the registry answers, the agent gets a bounded set',
    async (_label, which) => {
      const server = which === 'huge' ? huge : paged;
      const started = Date.now();
      const { server: saved } = await stack.api.act<{
        server: { status: { state: string; error?: string }; tools: unknown[] };
      }>('SetMcpServer', { name: which, config: { url: server.url } });
      const tookMs = Date.now() - started;
      // Bounded either way: at most 1,000 tools kept, or an error naming the bound that cut it.
      expect(saved.tools.length).toBeLessThanOrEqual(1_000);
      if (saved.status.state !== 'ok') expect(saved.status.error).toMatch(/bytes|pages|deadline|tools|bound/i);
      // The registry answers other actions at once.
      expect((await stack.api.act<{ servers: unknown[] }>('ListMcpServers')).servers.length).toBeGreaterThan(0);
      if (saved.status.state === 'ok') {
        const agent = await stack.createAgent(`many-${which}`, [which], 1);
        const { tools } = await stack.api.act<{ tools: unknown[] }>('ListAgentTools', { agent });
        expect(tools.length).toBeLessThanOrEqual(1_000);
      }
      report(
        `upstream lists 100,000 tools (${which === 'huge' ? 'one page' : '100 pages of 1,000'}): SetMcpServer in ${tookMs} ms, state ${saved.status.state}${saved.status.error ? ` "${saved.status.error}"` : ''}, ${saved.tools.length} tools kept, ${server.stats.listCalls} list requests`,
      );
    },
    120_000,
  );
});
