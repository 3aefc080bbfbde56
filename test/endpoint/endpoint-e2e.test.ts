import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEverythingServer, type EverythingServer } from '../servers/everything.js';
import { ApiClient } from '../support/api-client.js';
import { cliEnvFor, runCli } from '../support/cli.js';
import { uniqueNamespace } from '../support/env.js';
import { NatsAuthServer } from '../support/nats-auth-server.js';
import { ProcessSystem, eventually } from '../support/system.js';
import { INSPECTORS, lastJson, runInspector } from './inspector-clis.js';
import { startEndpointProcess, type EndpointProcess } from '../support/fixtures/endpoint-process.js';

/**
 * The "done when", as a user does it: the services as processes on a NATS that refuses
 * anonymous clients (each on its own user, the endpoint on its own too), server-everything
 * granted to an agent, a token issued with `mcpx agents tokens new`, the URL from `mcpx agents
 * endpoint`, and the Inspector's command-line client listing the agent's tools and calling
 * `everything__echo`; then `mcpx agents tokens revoke` and the same client is refused.
 */
describe('the agent MCP endpoint end to end (processes, NATS with least privilege, the CLI, the Inspector)', () => {
  let nats: NatsAuthServer;
  let system: ProcessSystem;
  let everything: EverythingServer;
  let endpoint: EndpointProcess | undefined;
  let logs: string[] = [];
  let endpointUrl: string;
  let cliEnv: Record<string, string>;
  const prefix = uniqueNamespace().natsPrefix;

  beforeAll(async () => {
    nats = await NatsAuthServer.start({ prefix });
    [system, everything] = await Promise.all([
      ProcessSystem.start({ env: { NATS_PREFIX: prefix }, natsEnv: (s) => nats.env(s) }),
      startEverythingServer('streamableHttp'),
    ]);
    endpoint = await startEndpointProcess(system, nats.env('endpoint'), { publicUrl: true });
    ({ url: endpointUrl, logs } = endpoint);
    ({ env: cliEnv } = cliEnvFor(new ApiClient(system.apiUrl), { MCPX_ENDPOINT_URL: endpointUrl }));
  }, 180_000);

  afterAll(async () => {
    await endpoint?.stop();
    await everything?.close();
    await system?.stop();
    await nats?.stop();
  });

  const mcpx = async (...args: string[]): Promise<any> => {
    const res = await runCli([...args, '--json'], cliEnv);
    if (res.code !== 0) throw new Error(`mcpx ${args.join(' ')} failed (${res.code}): ${res.stderr}`);
    return JSON.parse(res.stdout);
  };

  it('an Inspector command-line client lists the 16 tools of server-everything and calls everything__echo; a revoked token is refused', async () => {
    await mcpx('keys', 'new', '--force');
    await mcpx('servers', 'set', 'everything', everything.url);
    const agent = await mcpx('agents', 'create', 'helper', '--grant', 'everything');
    await eventually(
      async () => ((await mcpx('tools', 'ls', '--agent', 'helper')).tools.length >= 16 ? true : undefined),
      30_000,
      'tools projected',
    );

    const issued = await mcpx('agents', 'tokens', 'new', 'helper', '--name', 'inspector');
    expect(issued.token).toMatch(/^mcpx_at_/);
    const shown = await mcpx('agents', 'endpoint', 'helper', '--token', issued.token);
    expect(shown.url).toBe(`${endpointUrl}/v1/agents/${agent.id}/mcp`);
    expect(shown.snippets.vscode).toContain(shown.url);
    const human = await runCli(['agents', 'endpoint', 'helper'], cliEnv);
    expect(human.stdout).toContain(shown.url);
    expect(human.stdout).toContain('claude mcp add --transport http');

    const { bin, mode } = INSPECTORS['inspector 2.x'];
    const common = [...mode, shown.url, '--transport', 'http', '--header', `Authorization: Bearer ${issued.token}`];
    const list = await runInspector(bin, [...common, '--method', 'tools/list']);
    expect(list.code, list.stderr).toBe(0);
    const names: string[] = lastJson(list.stdout).tools.map((t: { name: string }) => t.name);
    // 16: the 13 of any client and the 3 server-everything shows to one that declares elicitation
    // and sampling, as discovery and the proxy both do; after a call, still 16.
    expect(names).toHaveLength(16);
    expect(names.every((n) => n.startsWith('everything__'))).toBe(true);
    const call = await runInspector(bin, [
      ...common,
      '--method',
      'tools/call',
      '--tool-name',
      'everything__echo',
      '--tool-arg',
      'message=done',
    ]);
    expect(call.code, call.stderr).toBe(0);
    expect(lastJson(call.stdout).content).toEqual([{ type: 'text', text: 'Echo: done' }]);
    // The proxy's own listing of the server (made as the call connected) agrees with discovery's: no flip.
    await new Promise((r) => setTimeout(r, 1_000));
    const again = await runInspector(bin, [...common, '--method', 'tools/list']);
    expect(lastJson(again.stdout).tools).toHaveLength(16);
    expect((await mcpx('tools', 'ls', '--agent', 'helper')).tools).toHaveLength(16);

    // A token whose user may approve its always_ask calls: made and listed by the CLI with the right.
    const approving = await mcpx('agents', 'tokens', 'new', 'helper', '--name', 'approver', '--user-may-approve');
    expect(approving.userMayApprove).toBe(true);
    const humanList = await runCli(['agents', 'tokens', 'list', 'helper'], cliEnv);
    expect(humanList.stdout.split('\n').find((l) => l.includes(approving.id))).toContain('user may approve');
    expect(humanList.stdout.split('\n').find((l) => l.includes(issued.id))).not.toContain('user may approve');
    expect((await mcpx('agents', 'tokens', 'revoke', approving.id)).revoked).toBe(true);

    const listed = await mcpx('agents', 'tokens', 'list', 'helper');
    expect(listed.tokens).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ id: issued.id, state: 'active', userMayApprove: false }),
        expect.objectContaining({ id: approving.id, state: 'revoked', userMayApprove: true }),
      ]),
    );
    expect(JSON.stringify(listed)).not.toContain(issued.token);
    expect((await mcpx('agents', 'tokens', 'revoke', issued.id)).revoked).toBe(true);
    await eventually(
      async () => {
        const again = await runInspector(bin, [...common, '--method', 'tools/list']);
        return again.code !== 0 ? again : undefined;
      },
      10_000,
      'the revoked token refused',
    );
    // Nothing of the token in the endpoint's logs.
    expect(logs.join('')).not.toContain(issued.token);
  }, 180_000);
});
