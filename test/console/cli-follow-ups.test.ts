import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPair } from '@mcpx/envelope';
import { dropTool } from '../approvals/approval-tools.js';
import { echoTool, startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { ApiClient } from '../support/api-client.js';
import { cliEnvFor, runCli } from '../support/cli.js';
import { ProxySystem } from '../support/proxy-system.js';

/** What a hostile server puts in its strings: retitle the window (OSC), clear the screen (CSI), an 8-bit CSI. */
const TITLE = '\u001b]0;evil\u0007';
const CLEAR = '\u001b[2J';
const C1_CSI = '\u009b2J';
/** A right-to-left override: what follows reads backwards (`gnp.exe` shows as `exe.png`). */
const RLO = '\u202E';
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;
/** Bidi controls and zero-width characters: none may reach the terminal as it is. */
const INVISIBLE = /[\u061c\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]/;

function escapingTool() {
  return {
    name: 'greet',
    description: `Greets.${TITLE}${CLEAR} Really.${RLO}gnp.exe\u200B`,
    inputSchema: { type: 'object', properties: { name: { type: 'string' } } },
    handler: () => ({ content: [{ type: 'text' as const, text: `hello${TITLE}${CLEAR}${C1_CSI} there${RLO}txt` }] }),
  };
}

/**
 * The CLI against the real system (registry, projector, proxy on the real Postgres, Redis and NATS,
 * MCP servers on loopback): remote strings reach the terminal with every control, bidi and invisible
 * character shown as its code point, a move
 * to another origin says which secrets were dropped, and signers are authorized and revoked.
 */
describe('mcpx: remote text, dropped secrets, signers', { timeout: 180_000 }, () => {
  let system: ProxySystem;
  let upstream: TestMcpServer;
  let keyed: TestMcpServer;
  let moved: TestMcpServer;
  let env: Record<string, string>;

  beforeAll(async () => {
    [system, upstream, keyed, moved] = await Promise.all([
      ProxySystem.start(),
      startTestMcpServer({ era: 'modern', tools: [escapingTool(), dropTool()] }),
      startTestMcpServer({ requireHeader: { name: 'X-Api-Key', value: 'k-first-origin' }, tools: [echoTool()] }),
      startTestMcpServer({ tools: [echoTool()] }),
    ]);
    await system.setServer('hostile', upstream.url);
    await system.createAgent('ops', ['hostile'], 2);
    ({ env } = cliEnvFor(system.api));
  });

  afterAll(async () => {
    await system?.stop();
    await Promise.all([upstream?.close(), keyed?.close(), moved?.close()]);
  });

  it('shows terminal escapes, bidi controls and zero-width characters as code points in human output; --json keeps them exact', async () => {
    const outputs = await Promise.all([
      runCli(['servers', 'show', 'hostile'], env),
      runCli(['servers', 'list'], env),
      runCli(['tools', 'ls', '--agent', 'ops'], env),
      runCli(['tools', 'search', 'greets', '--agent', 'ops'], env),
      runCli(['call', '--agent', 'ops', 'hostile__greet', '{}'], env),
    ]);
    for (const out of outputs) {
      expect(out.code, out.stderr).toBe(0);
      expect(out.stdout.replace(/[\n\t]/g, '')).not.toMatch(CONTROL);
      expect(out.stdout).not.toMatch(INVISIBLE);
    }
    const [show, , ls, search, call] = outputs;
    const shown = 'Greets.<U+001B>]0;evil<U+0007><U+001B>[2J Really.<U+202E>gnp.exe<U+200B>';
    expect(show?.stdout).toContain(`hostile__greet  [act] — ${shown}`);
    expect(ls?.stdout).toContain('<U+202E>gnp.exe');
    expect(search?.stdout).toContain('Really.<U+202E>gnp.exe');
    expect(call?.stdout).toContain('hello<U+001B>]0;evil<U+0007><U+001B>[2J<U+009B>2J there<U+202E>txt');

    const json = await runCli(['call', '--agent', 'ops', 'hostile__greet', '{}', '--json'], env);
    expect(json.code, json.stderr).toBe(0);
    expect((JSON.parse(json.stdout) as { text: string }).text).toBe(`hello${TITLE}${CLEAR}${C1_CSI} there${RLO}txt`);
    const listed = JSON.parse((await runCli(['servers', 'show', 'hostile', '--json'], env)).stdout) as {
      tools: Array<{ description?: string }>;
    };
    expect(listed.tools.map((t) => t.description)).toContain(`Greets.${TITLE}${CLEAR} Really.${RLO}gnp.exe\u200B`);
  });

  it("shows a server's status error with its bidi control as a code point", async () => {
    // A real loopback server that fails every request with a body that reads backwards.
    const failing = createServer((_req, res) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`upstream broke ${RLO}gnp.exe`);
    });
    await new Promise<void>((resolve) => failing.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(failing.address() as AddressInfo).port}/mcp`;
      await runCli(['servers', 'set', 'broken', url], env);
      const show = await runCli(['servers', 'show', 'broken'], env);
      const json = JSON.parse((await runCli(['servers', 'show', 'broken', '--json'], env)).stdout) as {
        status?: { error?: string };
        server?: { status?: { error?: string } };
      };
      const error = json.status?.error ?? json.server?.status?.error ?? '';
      expect(error).toContain(RLO);
      expect(show.stdout).toContain('<U+202E>gnp.exe');
      expect(show.stdout).not.toMatch(INVISIBLE);
    } finally {
      await new Promise<void>((resolve) => failing.close(() => resolve()));
    }
  });

  it("shows them in an approval's arguments and in error lines", async () => {
    const stopped = await runCli(
      ['call', '--agent', 'ops', 'hostile__drop_table', JSON.stringify({ table: `users${C1_CSI}\u0085${RLO}` })],
      env,
    );
    expect(stopped.code).not.toBe(0);
    expect(stopped.stderr).toContain('approval_required');
    const list = await runCli(['approvals', 'list'], env);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toContain('arguments: {"table":"users<U+009B>2J<U+0085><U+202E>"}');
    expect(list.stdout.replace(/[\n\t]/g, '')).not.toMatch(CONTROL);
    expect(list.stdout).not.toMatch(INVISIBLE);

    const unknown = await runCli(['call', '--agent', 'ops', `hostile__${TITLE}${RLO}nope`, '{}'], env);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toMatch(/^error: /);
    expect(unknown.stderr.replace(/[\n\t]/g, '')).not.toMatch(CONTROL);
    expect(unknown.stderr).not.toMatch(INVISIBLE);
  });

  it('servers set says which stored secrets a move to another origin dropped (human line and --json)', async () => {
    const first = await runCli(
      ['servers', 'set', 'moving', keyed.url, '--secret-header', 'X-Api-Key=k-first-origin'],
      env,
    );
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/^moving {2}connected/);
    expect(first.stdout).not.toContain('dropped');

    const human = await runCli(['servers', 'set', 'moving', moved.url], env);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toContain(
      'moved to another origin, so its stored secrets were dropped: secret header X-Api-Key (give it again with --secret-header)',
    );
    expect(human.stdout).not.toContain('k-first-origin');

    expect(
      (await runCli(['servers', 'set', 'moving', keyed.url, '--secret-header', 'X-Api-Key=k-first-origin'], env)).code,
    ).toBe(0);
    const json = await runCli(['servers', 'set', 'moving', moved.url, '--json'], env);
    expect(json.code, json.stderr).toBe(0);
    const answer = JSON.parse(json.stdout) as { name: string; droppedSecrets?: unknown; secretHeaderNames: string[] };
    expect(answer.name).toBe('moving');
    expect(answer.droppedSecrets).toEqual({ headers: ['X-Api-Key'], oauth: false });
    expect(answer.secretHeaderNames).toEqual([]);
    expect(json.stdout).not.toContain('k-first-origin');

    // The same origin keeps the stored secret, and says nothing.
    const again = await runCli(['servers', 'set', 'moving', moved.url, '--json'], env);
    expect((JSON.parse(again.stdout) as { droppedSecrets?: unknown }).droppedSecrets).toBeUndefined();
  });

  it('signers authorize and revoke: a WRITER acts until revoked; an AGENT signer is bound to the agents named', async () => {
    const writer = generateKeyPair();
    const asWriter = new ApiClient(system.api.apiUrl, writer, system.api.principal);
    const set = await runCli(['signers', 'authorize', writer.principal, '--role', 'WRITER'], env);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout.trim()).toBe(`authorized ${writer.principal} as WRITER`);
    await asWriter.act('ListMcpServers');

    const agentKey = generateKeyPair();
    const agent = await runCli(
      ['signers', 'authorize', agentKey.principal, '--role', 'AGENT', '--agent', 'ops', '--json'],
      env,
    );
    expect(agent.code, agent.stderr).toBe(0);
    expect(JSON.parse(agent.stdout)).toEqual({
      signer: { principal: agentKey.principal, role: 'AGENT', agents: ['ops'] },
    });
    const unbound = await runCli(['signers', 'authorize', agentKey.principal, '--role', 'AGENT'], env);
    expect(unbound.code).toBe(2);
    expect(unbound.stderr).toContain('--agent NAME');
    const noAgent = await runCli(
      ['signers', 'authorize', agentKey.principal, '--role', 'AGENT', '--agent', 'nobody'],
      env,
    );
    expect(noAgent.code).toBe(1);
    expect(noAgent.stderr).toContain('(field agents[0])');
    const badRole = await runCli(['signers', 'authorize', writer.principal, '--role', 'ADMIN'], env);
    expect(badRole.code).toBe(2);

    const revoke = await runCli(['signers', 'revoke', writer.principal], env);
    expect(revoke.code, revoke.stderr).toBe(0);
    expect(revoke.stdout.trim()).toBe(`revoked ${writer.principal}: it may no longer act for this account`);
    await expect(asWriter.act('ListMcpServers')).rejects.toMatchObject({ code: 'forbidden' });
    const twice = await runCli(['signers', 'revoke', writer.principal, '--json'], env);
    expect(JSON.parse(twice.stdout)).toEqual({ principal: writer.principal, revoked: false });
    const self = await runCli(['signers', 'revoke', system.api.principal], env);
    expect(self.code).toBe(1);
    expect(self.stderr).toContain('conflict');
  });
});
