import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { echoTool, errorTool, startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { cliEnvFor, runCli } from '../support/cli.js';
import { ProxySystem } from '../support/proxy-system.js';
import { eventually } from '../support/system.js';

describe('mcpx activity: what agents did, from the terminal', { timeout: 180_000 }, () => {
  let system: ProxySystem;
  let upstream: TestMcpServer;
  let env: Record<string, string>;

  beforeAll(async () => {
    [system, upstream] = await Promise.all([
      ProxySystem.start({ env: { ACTIVITY_FLUSH_MS: '50' } }),
      startTestMcpServer({ era: 'modern', tools: [echoTool(), errorTool()] }),
    ]);
    await system.setServer('demo', upstream.url);
    await system.createAgent('writer', ['demo'], 2);
    await system.createAgent('reader', ['demo'], 2);
    ({ env } = cliEnvFor(system.api));
    await system.call('writer', 'w-run', 'demo__echo', { text: 'hello' });
    await system.callError('writer', 'w-run', 'demo__fail', {});
    await system.call('reader', 'r-run', 'demo__echo', { text: 'hi' });
    await eventually(
      async () => ((await system.api.act<{ calls: unknown[] }>('ListCalls')).calls.length === 3 ? true : undefined),
      15_000,
      'three calls recorded',
    );
  });

  afterAll(async () => {
    await system?.stop();
    await upstream?.close();
  });

  it('lists calls newest first, one line each: time, code, duration, agent, tool, run', async () => {
    const out = await runCli(['activity'], env);
    expect(out.code, out.stderr).toBe(0);
    const lines = out.stdout.trim().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(
      /^\d{4}-\d\d-\d\dT\S+Z {2}ok\s+\d+ ms {2}reader {2}demo__echo {2}run r-run {2}\(modern\)$/,
    );
    expect(lines[1]).toMatch(/ {2}server_error\s+\d+ ms {2}writer {2}demo__fail {2}run w-run/);
  });

  it('filters by --agent, --server and --failed, and --json gives the page as the API does', async () => {
    const writer = await runCli(['activity', '--agent', 'writer'], env);
    expect(writer.stdout.trim().split('\n')).toHaveLength(2);
    const failed = await runCli(['activity', '--failed', '--json'], env);
    const page = JSON.parse(failed.stdout) as { calls: Array<{ tool: string; code: string; outcome: string }> };
    expect(page.calls.map((c) => [c.tool, c.code, c.outcome])).toEqual([['demo__fail', 'server_error', 'error']]);
    const none = await runCli(['activity', '--server', 'elsewhere'], env);
    expect(none.stdout.trim()).toBe('no calls recorded');
  });

  it('pages with --limit and prints how to ask for the older page', async () => {
    const first = await runCli(['activity', '--agent', 'writer', '--limit', '1'], env);
    const more = /older: mcpx activity --cursor (\S+) --agent writer/.exec(first.stdout);
    expect(more, first.stdout).not.toBeNull();
    const second = await runCli(['activity', '--agent', 'writer', '--limit', '1', '--cursor', more![1]!], env);
    expect(second.stdout).toContain('demo__echo');
    expect(second.stdout).not.toContain('older:');
  });

  it('prints per-server figures with --figures', async () => {
    const out = await runCli(['activity', '--figures'], env);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toMatch(
      /^demo\n {2}last hour: 3 calls, 33\.3% failed, p50 \d+ ms, p95 \d+ ms\n {2}last 24 h: 3 calls, 33\.3% failed/,
    );
  });

  it('refuses bad input in words, naming the field, with a failing exit code', async () => {
    const bad = await runCli(['activity', '--since', 'yesterday'], env);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('since');
    const both = await runCli(['activity', '--failed', '--outcome', 'ok'], env);
    expect(both.code).not.toBe(0);
    expect(both.stderr).toContain('--failed');
  });
});
