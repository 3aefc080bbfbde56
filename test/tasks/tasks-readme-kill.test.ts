import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnvFor, runCli, runCommand } from '../support/cli.js';
import { serviceUrls } from '../support/env.js';
import { ProxySystem, spawnProxyProcess, type ProxyProcess } from '../support/proxy-system.js';
import { ROOT, eventually } from '../support/system.js';

/** The README's block that kills a task's poller: its lines (comments and blank lines dropped), in order. */
function killBlock(): string[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf('## Tasks: calls that outlive the call bound');
  if (start === -1) throw new Error('README.md has no tasks section');
  const section = readme.slice(start, readme.indexOf('\n## ', start + 1));
  const block = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!).find((b) => b.includes('kill -9'));
  if (block === undefined) throw new Error('the tasks section has no block that kills a proxy');
  return block
    .split('\n')
    .map((l) => l.replace(/\s+#.*$/, '').trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
}

/** The words of a line: single quotes kept together. */
function words(line: string): string[] {
  return [...line.matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2]!);
}

/**
 * Issue 23's "a modern long task survives `kill -9` of the proxy that polled it", from the README
 * itself: its block run as printed against real processes: two proxy processes (the harness's
 * `PROXY_INSTANCES=2 npm start`: one registry, projector, NATS and Postgres), the task server
 * started by the README's own command (its task shortened by `--duration-ms`, as tests may), and
 * every `mcpx` line in its own process. The proxy `mcpx tasks show` names is killed with `kill -9`
 * (its pid); the other one takes the task over (`tasks show` names it), finishes it, and `mcpx
 * tasks result` prints the export; the server made the task once.
 */
describe("the README's kill -9 of a task's poller, as printed", () => {
  let system: ProxySystem;
  let procs: ProxyProcess[] = [];
  let server: ChildProcess | undefined;
  let env: Record<string, string>;
  let helper: string;

  beforeAll(async () => {
    system = await ProxySystem.start({ proxies: 0 });
    const proxyEnv = { LOG_LEVEL: 'warn' };
    procs = [await spawnProxyProcess(system, proxyEnv), await spawnProxyProcess(system, proxyEnv)];
    helper = await system.createAgent('helper', [], 0);
    ({ env } = cliEnvFor(system.api, { MCPX_NATS_PREFIX: system.env.NATS_PREFIX ?? '' }));
  }, 120_000);

  afterAll(async () => {
    server?.kill('SIGTERM');
    await Promise.all(procs.map((p) => p.stop().catch(() => undefined)));
    await system?.stop();
  });

  it('the poller killed: the other instance polls the task, finishes it, and tasks result prints it', async () => {
    const lines = killBlock();
    expect(
      lines.map((l) =>
        words(l)
          .slice(0, l.startsWith('npm run mcpx') ? 5 : 2)
          .join(' '),
      ),
    ).toEqual([
      'PROXY_INSTANCES=2 npm',
      'node_modules/.bin/tsx test/servers/tasks-upstream-main.ts',
      'npm run mcpx -- servers',
      'npm run mcpx -- agents',
      'npm run mcpx -- call',
      'npm run mcpx -- tasks',
      'kill -9',
      'npm run mcpx -- tasks',
      'npm run mcpx -- tasks',
    ]);
    const [, serverLine, setServer, grant, call, show, kill, showAgain, result] = lines as [
      string,
      string,
      string,
      string,
      string,
      string,
      string,
      string,
      string,
    ];
    // The task server, by the README's command: on a free port, its task shortened.
    const [command, ...args] = words(serverLine).map((w) => (w === '3003' ? '0' : w));
    server = spawn(join(ROOT, command!), [...args, '--duration-ms', '20000'], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let printed = '';
    server.stdout!.on('data', (d: Buffer) => (printed += d.toString('utf8')));
    const url = await eventually(async () => /"url":"([^"]+)"/.exec(printed)?.[1], 60_000, 'the task server');

    const cli = async (line: string, replace: (w: string) => string = (w) => w) => {
      const out = await runCli(words(line).slice(4).map(replace), env);
      expect(out.code, `${line}\n${out.stdout}\n${out.stderr}`).toBe(0);
      return out.stdout;
    };
    await cli(setServer, (w) => (w === 'http://127.0.0.1:3003/mcp' ? url : w));
    await cli(grant);
    await eventually(
      async () => {
        const t = await system.api.act<{ tools: { name: string }[] }>('ListAgentTools', { agent: helper });
        return t.tools.some((x) => x.name === 'exports__long-export') ? true : undefined;
      },
      30_000,
      'exports__long-export projected onto helper',
    );
    // The runtime's NATS (the test's own, open): the README's URL and credentials file are `npm start`'s.
    const nats = (w: string): string => (w === 'nats://127.0.0.1:4223' ? serviceUrls().nats : w);
    const callWords = words(call).slice(4).map(nats);
    const at = callWords.indexOf('--nats-credentials');
    callWords.splice(at, 2);
    const created = await runCli(callWords, env);
    expect(created.code, created.stderr).toBe(0);
    const id = /(tsk_[a-z2-7]{24})/.exec(created.stdout)?.[1];
    expect(id, created.stdout).toBeDefined();
    const withId = (w: string): string => (w === 'tsk_…' ? id! : w);

    const poller = /polled by (\S+)/.exec(await cli(show, withId))?.[1];
    const victim = procs.find((p) => p.instance === poller);
    expect(victim, `polled by ${poller}`).toBeDefined();
    const survivor = procs.find((p) => p !== victim)!;
    // `kill -9 <pid>`: the pid of the instance that polls the task.
    const killed = await runCommand('kill', [...words(kill).slice(1, 2), String(victim!.child.pid)], {});
    expect(killed.code, killed.stderr).toBe(0);
    await eventually(
      async () => (victim!.child.signalCode === 'SIGKILL' ? true : undefined),
      10_000,
      'the poller gone',
    );

    const takenOver = await eventually(
      async () => {
        const out = await cli(showAgain, withId);
        return out.includes(`polled by ${survivor.instance}`) || / completed/.test(out.split('\n')[0]!)
          ? out
          : undefined;
      },
      60_000,
      'the task taken over by the other instance',
    );
    expect(takenOver).not.toContain(`polled by ${victim!.instance}`);
    const printedResult = await eventually(
      async () => {
        const out = await runCli(words(result).slice(4).map(withId), env);
        return out.code === 0 ? out.stdout : undefined;
      },
      90_000,
      'the result, once the task completed',
    );
    expect(printedResult).toContain('export ready: csv');
  }, 300_000);
});
