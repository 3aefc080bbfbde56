import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPair } from '@mcpx/envelope';
import { TaskClient } from '@mcpx/proxy-client';
import { cliEnvFor, runCli } from '../support/cli.js';
import { serviceUrls } from '../support/env.js';
import { ProxySystem } from '../support/proxy-system.js';
import { entryArgs } from '../support/bundles.js';
import { ROOT, eventually } from '../support/system.js';
import { startEverythingServer, type EverythingServer } from '../servers/index.js';
import { startTasksUpstream, type TasksUpstream } from '../servers/tasks-upstream.js';

const TASK_ID = /(tsk_[a-z2-7]{24})/;

/**
 * A person's side of brokered tasks (docs/tasks.md): `mcpx call` waits for a task with its status
 * on stderr and prints its result; `--no-wait` prints the handle; `mcpx tasks show|list|result|
 * cancel` over NATS, for the key's account only. The real system (registry, projector, proxy on
 * NATS, Postgres, Redis), a modern SDK v2 server speaking the 2026-07-28 tasks extension and
 * server-everything's `simulate-research-query` (2025-11-25 tasks, `required`).
 */
describe('mcpx call on a task and mcpx tasks', { timeout: 180_000 }, () => {
  let system: ProxySystem;
  let upstream: TasksUpstream;
  let everything: EverythingServer;
  let env: Record<string, string>;
  let dir: string;

  beforeAll(async () => {
    [system, upstream, everything] = await Promise.all([
      ProxySystem.start({ env: { TASK_LEASE_MS: '1500', TASK_POLL_MIN_MS: '100' } }),
      startTasksUpstream({ durationMs: 3_000, pollIntervalMs: 250 }),
      startEverythingServer('streamableHttp'),
    ]);
    await system.setServer('modern', upstream.url);
    await system.setServer('every', everything.url);
    await system.createAgent('reports', ['modern', 'every'], 12);
    ({ env, dir } = cliEnvFor(system.api, {
      MCPX_NATS_URL: serviceUrls().nats,
      MCPX_NATS_PREFIX: system.env.NATS_PREFIX ?? '',
    }));
  }, 120_000);

  afterAll(async () => {
    await system?.stop();
    await Promise.all([upstream?.close(), everything?.close()]);
  });

  it('a call that becomes a task past its bound waits for it, shows its status on stderr, and prints the result', async () => {
    const before = upstream.stats.created;
    const out = await runCli(
      ['call', '--agent', 'reports', '--task', '--timeout-ms', '800', 'modern__long-export', '{"format":"pdf"}'],
      env,
    );
    expect(out.code, out.stderr).toBe(0);
    expect(upstream.stats.created).toBe(before + 1);
    const id = TASK_ID.exec(out.stderr)?.[1];
    expect(id, out.stderr).toBeDefined();
    // The handle's line, then the broker's events: the server's status text, then the end.
    expect(out.stderr).toMatch(new RegExp(`task ${id!} working: exporting \\(\\d+ s left\\)`));
    expect(out.stderr).toContain(`task ${id!} completed`);
    expect(out.stdout).toContain('export ready: pdf');
    expect(out.stdout).toContain('structured content');
    // The task the call waited for is the broker's, ended.
    const show = await runCli(['tasks', 'show', id!, '--json'], env);
    expect(show.code, show.stderr).toBe(0);
    expect((JSON.parse(show.stdout) as { task: { state: string; tool: string } }).task).toMatchObject({
      state: 'completed',
      tool: 'modern__long-export',
    });
  });

  it('--json waits without status lines and prints the whole result', async () => {
    const out = await runCli(
      [
        'call',
        '--agent',
        'reports',
        '--task',
        '--timeout-ms',
        '800',
        'modern__long-export',
        '{"format":"csv"}',
        '--json',
      ],
      env,
    );
    expect(out.code, out.stderr).toBe(0);
    expect(out.stderr).not.toContain('task tsk_');
    const result = JSON.parse(out.stdout) as { text: string; result: unknown; taskId: string; task?: unknown };
    expect(result.text).toBe('export ready: csv');
    expect(result.result).toEqual({ format: 'csv', rows: 42 });
    expect(result.taskId).toMatch(TASK_ID);
    expect(result.task).toBeUndefined();
  });

  it('--no-wait prints the handle and exits 0; tasks result is a conflict while it runs, the result once it ended', async () => {
    const out = await runCli(
      [
        'call',
        '--agent',
        'reports',
        '--task',
        '--no-wait',
        '--timeout-ms',
        '500',
        'modern__long-export',
        '{"format":"xml"}',
        '--json',
      ],
      env,
    );
    expect(out.code, out.stderr).toBe(0);
    const handle = (JSON.parse(out.stdout) as { task: { id: string; state: string } }).task;
    expect(handle.id).toMatch(TASK_ID);
    expect(handle.state).toBe('working');
    const early = await runCli(['tasks', 'result', handle.id], env);
    expect(early.code).toBe(1);
    expect(early.stderr).toContain('error: conflict');

    const list = await runCli(['tasks', 'list', '--agent', 'reports'], env);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toMatch(new RegExp(`${handle.id}  (working|completed)  modern__long-export  agent reports`));

    // Wait for the end as a person would: the task's show says its result is ready.
    let shown = '';
    for (let i = 0; i < 60 && !shown.includes('result ready'); i++) {
      shown = (await runCli(['tasks', 'show', handle.id], env)).stdout;
      if (!shown.includes('result ready')) await new Promise((r) => setTimeout(r, 500));
    }
    expect(shown).toContain(`task ${handle.id}: completed`);
    const result = await runCli(['tasks', 'result', handle.id], env);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('export ready: xml');
  });

  it('tasks cancel asks the server and the task ends cancelled; its result is the typed cancel', async () => {
    const out = await runCli(
      ['call', '--agent', 'reports', '--task', '--no-wait', '--timeout-ms', '500', 'modern__never-ends', '{}'],
      env,
    );
    expect(out.code, out.stderr).toBe(0);
    const id = TASK_ID.exec(out.stdout)?.[1];
    expect(id, out.stdout).toBeDefined();
    expect(out.stdout).toContain(`mcpx tasks cancel ${id!}`);
    const cancels = upstream.stats.cancels;
    const cancelled = await runCli(['tasks', 'cancel', id!], env);
    expect(cancelled.code, cancelled.stderr).toBe(0);
    expect(cancelled.stdout.trim()).toBe(`task ${id!}: cancelled`);
    expect(upstream.stats.cancels).toBe(cancels + 1);
    const result = await runCli(['tasks', 'result', id!], env);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('error: cancelled');
  });

  it("another account's key cannot read, cancel or take a task: not_found, and the task runs on", async () => {
    const out = await runCli(
      [
        'call',
        '--agent',
        'reports',
        '--task',
        '--no-wait',
        '--timeout-ms',
        '500',
        'modern__never-ends',
        '{}',
        '--json',
      ],
      env,
    );
    const id = (JSON.parse(out.stdout) as { task: { id: string } }).task.id;
    const otherKey = join(dir, 'other-key.json');
    writeFileSync(otherKey, JSON.stringify(generateKeyPair()), { mode: 0o600 });
    const other = { ...env, MCPX_KEY_FILE: otherKey };
    for (const verb of ['show', 'cancel', 'result']) {
      const res = await runCli(['tasks', verb, id], other);
      expect(res.code, `${verb}: ${res.stdout}`).toBe(1);
      expect(res.stderr).toContain('error: not_found');
    }
    const list = await runCli(['tasks', 'list', '--json'], other);
    expect(list.code, list.stderr).toBe(0);
    expect(JSON.parse(list.stdout)).toEqual({ tasks: [] });
    const mine = await runCli(['tasks', 'show', id, '--json'], env);
    expect((JSON.parse(mine.stdout) as { task: { state: string } }).task.state).toBe('working');
    await runCli(['tasks', 'cancel', id], env);
  });

  it('a task cancelled while the call waits ends the call with the typed cancel (exit 1), never a hang', async () => {
    // The CLI in its own process, its stderr read as it comes: cancelled once it is waiting (it printed the handle).
    const child = spawn(
      process.execPath,
      [...entryArgs('mcpx'), 'call', '--agent', 'reports', '--task', '--timeout-ms', '500', 'modern__never-ends', '{}'],
      {
        cwd: ROOT,
        env: { ...process.env, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    const exited = new Promise<number>((resolve) => child.on('exit', (code) => resolve(code ?? 1)));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    try {
      const id = await eventually(
        async () => /task (tsk_[a-z2-7]{24}) working/.exec(stderr)?.[1],
        30_000,
        'the call waiting for its task',
      );
      await new TaskClient(system.nc, system.subjects).cancelTask(system.account, id);
      expect(await exited).toBe(1);
      expect(stderr).toContain(`task ${id} cancelled`);
      expect(stderr).toContain('error: cancelled');
      expect(stdout).toBe('');
    } finally {
      clearTimeout(timer);
      child.kill('SIGKILL');
    }
  });

  it('a required tool (2025-11-25) is a task without --task: the call waits for the report; through the API the handle is printed with what to do', async () => {
    const waited = await runCli(
      ['call', '--agent', 'reports', '--timeout-ms', '500', 'every__simulate-research-query', '{"topic":"tides"}'],
      env,
    );
    expect(waited.code, waited.stderr).toBe(0);
    expect(waited.stderr).toMatch(/task tsk_[a-z2-7]{24} working/);
    expect(waited.stderr).toMatch(/task tsk_[a-z2-7]{24} completed/);
    expect(waited.stdout).toContain('# Research Report: tides');

    const viaApi = await runCli(
      ['call', '--agent', 'reports', '--timeout-ms', '500', 'every__simulate-research-query', '{"topic":"reefs"}'],
      { ...env, MCPX_NATS_URL: '' },
    );
    expect(viaApi.code, viaApi.stderr).toBe(0);
    const id = TASK_ID.exec(viaApi.stdout)?.[1];
    expect(id, viaApi.stdout).toBeDefined();
    expect(viaApi.stdout).toContain(`mcpx tasks result ${id!}`);
    expect(viaApi.stdout).toContain('over NATS');
    // The task the API's call made is the account's, and an operator waits for it over NATS.
    let shown = '';
    for (let i = 0; i < 60 && !shown.includes('result ready'); i++) {
      shown = (await runCli(['tasks', 'show', id!], env)).stdout;
      if (!shown.includes('result ready')) await new Promise((r) => setTimeout(r, 500));
    }
    expect(shown).toContain(`task ${id!}: completed`);
    const report = await runCli(['tasks', 'result', id!], env);
    expect(report.code, report.stderr).toBe(0);
    expect(report.stdout).toContain('# Research Report: reefs');
  });

  it('without NATS, tasks and --task are refused with how to use them; a bad id is a usage error', async () => {
    const noNats = { ...env, MCPX_NATS_URL: '' };
    const tasks = await runCli(['tasks', 'list'], noNats);
    expect(tasks.code).toBe(2);
    expect(tasks.stderr).toContain('mcpx tasks goes over NATS');
    const call = await runCli(
      ['call', '--agent', 'reports', '--task', 'modern__long-export', '{"format":"pdf"}'],
      noNats,
    );
    expect(call.code).toBe(2);
    expect(call.stderr).toContain('--task goes over NATS');
    const bad = await runCli(['tasks', 'show', 'tsk_../../x'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('is not a task id');
  });
});
