import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodePayload, makeSubjects, type RunEnded } from '@mcpx/contracts';
import { echoTool, startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { ApiClient } from '../support/api-client.js';
import { cliEnvFor, runCli } from '../support/cli.js';
import { uniqueNamespace } from '../support/env.js';
import { NatsAuthServer } from '../support/nats-auth-server.js';
import { ProcessSystem, eventually } from '../support/system.js';

/**
 * A user's CLI never needs NATS: against a stack whose NATS refuses anonymous clients, `mcpx call`
 * (InvokeTool, with a human in the loop too) and `mcpx runs end` (EndRun, for the signer's own
 * account only) work with nothing but the API and a key; the NATS mode is for operators holding
 * the runtime's credentials.
 */
describe('mcpx without NATS credentials', () => {
  let nats: NatsAuthServer;
  let system: ProcessSystem;
  let upstream: TestMcpServer;
  let api: ApiClient;
  let env: Record<string, string>;
  let dir: string;
  let operator: NatsConnection;
  const ended: string[] = [];
  const prefix = uniqueNamespace().natsPrefix;

  beforeAll(async () => {
    nats = await NatsAuthServer.start({ prefix });
    const drop = {
      name: 'drop',
      description: 'Drop a table.',
      inputSchema: { type: 'object', properties: { table: { type: 'string' } }, required: ['table'] },
      annotations: { destructiveHint: true },
      handler: (args: Record<string, unknown>) => ({
        content: [{ type: 'text' as const, text: `dropped ${String(args['table'])}` }],
      }),
    };
    [system, upstream] = await Promise.all([
      ProcessSystem.start({ env: { NATS_PREFIX: prefix }, natsEnv: (s) => nats.env(s) }),
      startTestMcpServer({ tools: [echoTool(), drop] }),
    ]);
    api = new ApiClient(system.apiUrl);
    await api.act('SetMcpServer', { name: 'demo', config: { url: upstream.url } });
    await api.act('CreateAgent', { name: 'helper', definition: { mcpServers: ['demo'] } });
    await eventually(
      async () =>
        JSON.stringify(await api.act('ListAgentTools', { agent: 'helper' })).includes('demo__drop') ? true : undefined,
      30_000,
      'tools projected',
    );
    ({ env, dir } = cliEnvFor(api));
    operator = await nats.connectAs('operator');
    operator.subscribe(makeSubjects(prefix).runEndedAll, {
      callback: (err, msg) => void (err ?? ended.push(`${msg.subject} ${decodePayload<RunEnded>(msg.data).run}`)),
    });
    await operator.flush();
  }, 120_000);

  afterAll(async () => {
    await operator?.close();
    await upstream?.close();
    await system?.stop();
    await nats?.stop();
  });

  const mcpx = async (
    args: string[],
    extra: Record<string, string> = {},
  ): Promise<{ code: number; stdout: string; stderr: string }> => await runCli(args, { ...env, ...extra });

  it('calls a tool in a run and ends the run through the API', async () => {
    const first = await mcpx([
      'call',
      '--agent',
      'helper',
      '--run',
      'cli-run',
      'demo__echo',
      '{"text":"over http"}',
      '--json',
    ]);
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ run: 'cli-run', text: 'echo: over http' });
    const second = await mcpx(['call', '--agent', 'helper', '--run', 'cli-run', 'demo__echo', '{"text":"again"}']);
    expect(second.stdout).toContain('echo: again');

    const end = await mcpx(['runs', 'end', 'cli-run', '--json']);
    expect(end.code, end.stderr).toBe(0);
    expect(JSON.parse(end.stdout)).toEqual({ run: 'cli-run', ended: true });
    // The registry published the end for the signer's account, and only for it.
    await eventually(
      async () => (ended.includes(`${prefix}mcp.runs.ended.${api.principal}.cli-run cli-run`) ? true : undefined),
      10_000,
      'run ended',
    );
  });

  it('ends a run of the signer’s own account only', async () => {
    const other = new ApiClient(system.apiUrl);
    await other.act('EndRun', { run: 'cli-run-b' });
    await eventually(
      async () => (ended.includes(`${prefix}mcp.runs.ended.${other.principal}.cli-run-b cli-run-b`) ? true : undefined),
      10_000,
      'run ended',
    );
    expect(ended.filter((e) => e.includes(`.${api.principal}.cli-run-b`))).toEqual([]);
    await expect(other.act('EndRun', { run: 'a.b' })).rejects.toMatchObject({
      code: 'invalid_input',
      details: { field: 'run' },
    });
    await expect(other.act('EndRun', {})).rejects.toMatchObject({ code: 'invalid_input', details: { field: 'run' } });
    // The request is decoded before anything is looked up: a wildcard in the run is refused by name,
    // and a well-formed call to another account's agent finds nothing.
    await expect(other.act('InvokeTool', { agent: 'helper', tool: 'demo__echo', run: 'x>' })).rejects.toMatchObject({
      code: 'invalid_input',
      details: { field: 'run' },
    });
    await expect(other.act('InvokeTool', { agent: 'helper', tool: 'demo__echo', run: 'x' })).rejects.toMatchObject({
      code: 'not_found',
    });
    await expect(api.act('InvokeTool', { agent: 'helper', tool: 'demo__echo', run: '*' })).rejects.toMatchObject({
      code: 'invalid_input',
      details: { field: 'run' },
    });
  });

  it('waits for a human through the API (--wait-approval) and runs the call once approved', async () => {
    const before = upstream.stats.calls;
    const waiting = mcpx(['call', '--agent', 'helper', '--wait-approval', '60', 'demo__drop', '{"table":"sessions"}']);
    const approval = await eventually(
      async () => {
        const res = await api.act<{ approvals: Array<{ id: string; status: string; arguments?: { table?: string } }> }>(
          'ListApprovals',
        );
        return res.approvals.find((a) => a.status === 'pending' && a.arguments?.table === 'sessions');
      },
      30_000,
      'the call to stop for a human',
    );
    expect(upstream.stats.calls).toBe(before);
    await api.act('ApproveToolCall', { approvalId: approval.id });
    const done = await waiting;
    expect(done.code, done.stderr).toBe(0);
    expect(done.stderr).toContain(`waiting up to 60 s for a human to approve ${approval.id}`);
    expect(done.stdout).toContain('dropped sessions');
  });

  it('the NATS mode is for operators: refused without credentials, works with the runtime’s', async () => {
    const anonymous = await mcpx(['call', '--agent', 'helper', '--nats', nats.url, 'demo__echo', '{"text":"x"}'], {
      MCPX_NATS_PREFIX: prefix,
    });
    expect(anonymous.code).toBe(1);
    expect(anonymous.stderr).toContain(`NATS at ${nats.url} refused an anonymous connection`);

    const file = join(dir, 'runtime.json');
    const { user, pass } = nats.credentials('runtime');
    writeFileSync(file, JSON.stringify({ user, password: pass }), { mode: 0o600 });
    const viaNats = await mcpx(
      [
        'call',
        '--agent',
        'helper',
        '--nats',
        nats.url,
        '--nats-credentials',
        file,
        'demo__echo',
        '{"text":"over nats"}',
      ],
      { MCPX_NATS_PREFIX: prefix },
    );
    expect(viaNats.code, viaNats.stderr).toBe(0);
    expect(viaNats.stdout).toContain('echo: over nats');
    const byEnv = await mcpx(['runs', 'end', 'r-nats', '--json'], {
      MCPX_NATS_URL: nats.url,
      MCPX_NATS_PREFIX: prefix,
      MCPX_NATS_USER: user,
      MCPX_NATS_PASSWORD: pass,
    });
    expect(byEnv.code, byEnv.stderr).toBe(0);
    expect(byEnv.stderr).not.toContain(pass);
    const wrong = await mcpx(['runs', 'end', 'r-nats'], {
      MCPX_NATS_URL: nats.url,
      MCPX_NATS_USER: user,
      MCPX_NATS_PASSWORD: 'wrong-password-0123456789',
    });
    expect(wrong.stderr).toContain(`refused the user ${user}`);
    expect(wrong.stderr).not.toContain('wrong-password');
  });
});
