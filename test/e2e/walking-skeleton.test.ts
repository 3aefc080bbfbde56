import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodePayload, makeSubjects, type AgentToolsChangedEvent } from '@mcpx/contracts';
import { freePort, startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { runCli } from '../support/cli.js';
import { serviceUrls } from '../support/env.js';
import { ProcessSystem, eventually } from '../support/system.js';

/**
 * The walking skeleton, driven as a user drives it: the CLI against the three services running as
 * separate processes on real NATS, Postgres and Redis, and real MCP servers on loopback: one
 * modern-only (2026-07-28, no sessions) and one legacy (2025, a session per run), one system for both.
 */
/** Each CLI command is a process of its own (about a second of CPU): a flow of a dozen gets three minutes on a busy machine. */
describe('walking skeleton: registry → projector → proxy', { timeout: 180_000 }, () => {
  let system: ProcessSystem;
  let upstream: TestMcpServer;
  let modern: TestMcpServer;
  let nc: NatsConnection;
  let cliEnv: Record<string, string>;

  beforeAll(async () => {
    [system, upstream, modern] = await Promise.all([
      ProcessSystem.start(),
      startTestMcpServer(),
      startTestMcpServer({ era: 'modern' }),
    ]);
    nc = await connect({ servers: serviceUrls().nats });
    cliEnv = {
      MCPX_API_URL: system.apiUrl,
      MCPX_NATS_URL: serviceUrls().nats,
      MCPX_NATS_PREFIX: system.env.NATS_PREFIX ?? '',
      MCPX_KEY_FILE: join(mkdtempSync(join(tmpdir(), 'mcpx-e2e-')), 'key.json'),
    };
  });

  afterAll(async () => {
    await nc?.drain();
    await Promise.all([upstream?.close(), modern?.close()]);
    await system?.stop();
  });

  const mcpx = async (...args: string[]): Promise<any> => {
    const res = await runCli([...args, '--json'], cliEnv);
    if (res.code !== 0) throw new Error(`mcpx ${args.join(' ')} failed (${res.code}): ${res.stderr}`);
    return JSON.parse(res.stdout);
  };

  it.each(['modern', 'legacy'] as const)(
    'connects a %s server, grants it, projects its tools and calls one through the proxy',
    async (era) => {
      const server$ = era === 'modern' ? modern : upstream;
      const key = await mcpx('keys', 'new', '--force');
      expect(key.principal).toMatch(/^[A-Za-z0-9_-]{43}$/);
      const account: string = key.principal;

      const agent = await mcpx('agents', 'create', 'helper');
      expect(agent.grants.mcpServers).toEqual([]);

      const server = await mcpx('servers', 'set', 'demo', server$.url);
      expect(server.status.state).toBe('ok');
      expect(server.status.era).toBe(era);
      expect(server.tools.map((t: { toolName: string }) => t.toolName).sort()).toEqual(['demo__add', 'demo__echo']);
      expect(server.transport).toBeNull();
      expect(server.status.transport).toBe('http');

      const subjects = makeSubjects(system.env.NATS_PREFIX);
      const changed: AgentToolsChangedEvent[] = [];
      const sub = nc.subscribe(subjects.agentToolsChanged(account, agent.id), {
        callback: (_err, msg) => {
          changed.push(decodePayload<AgentToolsChangedEvent>(msg.data));
        },
      });
      await nc.flush();

      const granted = await mcpx('agents', 'grant', 'helper', 'demo');
      expect(granted.grants.mcpServers).toEqual(['demo']);

      const event = await eventually(async () => changed[0], 15_000, 'agent-tools-changed');
      expect(Object.keys(event.added).sort()).toEqual(['demo__add', 'demo__echo']);
      expect(event.removed).toEqual([]);
      expect(event.version).toBeGreaterThanOrEqual(1);
      sub.unsubscribe();

      const tools = await mcpx('tools', 'ls', '--agent', 'helper');
      expect(tools.tools.map((t: { name: string }) => t.name)).toEqual(['demo__add', 'demo__echo']);
      const echo = tools.tools.find((t: { name: string }) => t.name === 'demo__echo');
      expect(echo).toMatchObject({ kind: 'mcp', server: 'demo', remoteName: 'echo', permission: 'act' });
      expect(echo.cid).toBe(event.added.demo__echo);
      expect(tools.index).toContain('- demo__echo — ');
      expect(tools.index).toContain('(demo MCP)');

      const handshakesBefore = server$.stats.handshakes;
      const probesBefore = server$.stats.discovers;
      const first = await mcpx('call', '--agent', 'helper', '--run', 'run-1', 'demo__echo', '{"text":"hello"}');
      expect(first.text).toBe('echo: hello');
      expect(first.summary).toBe('demo__echo · hello');
      expect(first.argument).toBe('hello');
      const second = await mcpx('call', '--agent', 'helper', '--run', 'run-1', 'demo__add', '{"a":2,"b":3}');
      expect(second.result).toEqual({ sum: 5 });
      expect(second.summary).toBe('Ran demo__add on the demo MCP server');
      if (era === 'legacy') {
        // One handshake for the run, shared by its calls.
        expect(server$.stats.handshakes - handshakesBefore).toBe(1);
      } else {
        // No handshake at all, and no probe either: the proxy connects with the registry's verdict.
        expect(server$.stats.handshakes).toBe(0);
        expect(server$.stats.discovers - probesBefore).toBe(0);
      }
      expect(second.instance).toBe(first.instance);

      const proxy = system.services.find((s) => s.name === 'proxy');
      const stats = async () =>
        (await (await fetch(`${proxy?.internalUrl}/stats`)).json()) as { connections: number; runs: number };
      expect((await stats()).connections).toBe(1);
      expect((await stats()).runs).toBe(1);
      const ended = await mcpx('runs', 'end', 'run-1');
      expect(ended.ended).toBe(true);
      await eventually(
        async () => ((await stats()).connections === 0 ? true : undefined),
        10_000,
        'the run pool to close',
      );
      expect((await stats()).runs).toBe(0);
    },
  );

  it('saves a server that cannot be reached, with status error and the exact connect error', async () => {
    await mcpx('keys', 'new', '--force');
    const port = await freePort();
    const server = await mcpx('servers', 'set', 'down', `http://127.0.0.1:${port}/mcp`);
    expect(server.status.state).toBe('error');
    expect(server.status.error).toContain(`connect ECONNREFUSED 127.0.0.1:${port}`);
    expect(server.tools).toEqual([]);
    const list = await mcpx('servers', 'list');
    expect(list.servers.map((s: { name: string }) => s.name)).toEqual(['down']);
    expect(list.servers[0].status.state).toBe('error');
  });

  it('answers a call with arguments that miss the contract with the contract, and calls nothing', async () => {
    await mcpx('keys', 'new', '--force');
    await mcpx('servers', 'set', 'demo', upstream.url);
    await mcpx('agents', 'create', 'strict', '--grant', 'demo');
    await eventually(async () => {
      const t = await mcpx('tools', 'ls', '--agent', 'strict');
      return t.tools.length === 2 ? true : undefined;
    });
    const callsBefore = upstream.stats.calls;
    const res = await runCli(['call', '--agent', 'strict', 'demo__add', '{"a":"two"}', '--json'], cliEnv);
    expect(res.code).toBe(1);
    const err = JSON.parse(res.stderr).error;
    expect(err.code).toBe('invalid_arguments');
    expect(err.details.contract.name).toBe('demo__add');
    expect(err.details.contract.inputSchema.properties.a.type).toBe('number');
    expect(upstream.stats.calls).toBe(callsBefore);
  });
});
