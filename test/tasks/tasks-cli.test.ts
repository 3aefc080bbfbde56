import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPair } from '@mcpx/envelope';
import { TaskClient } from '@mcpx/proxy-client';
import { cliEnvFor, runCli, startCli } from '../support/cli.js';
import { serviceUrls } from '../support/env.js';
import { ProxySystem } from '../support/proxy-system.js';
import { eventually } from '../support/system.js';
import { startEverythingServer, type EverythingServer } from '../servers/index.js';
import { startTasksUpstream, type TasksUpstream } from '../servers/tasks-upstream.js';

const TASK_ID = /(tsk_[a-z2-7]{24})/;

/**
 * A person's side of brokered tasks (docs/tasks.md): `mcpx call` waits for a task with its status
 * on stderr and prints its result; `--no-wait` prints the handle; `mcpx tasks show|list|result|
 * cancel` through the API (the registry's task actions) and over NATS, for the key's account only. The real system (registry, projector, proxy on
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

  /** `mcpx call --task --no-wait` of `tool` as the agent `reports`, with a 500 ms call bound. */
  const callNoWait = (tool: string, args: string, ...flags: string[]) =>
    runCli(['call', '--agent', 'reports', '--task', '--no-wait', '--timeout-ms', '500', tool, args, ...flags], env);

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
    const asked = Date.now();
    const out = await callNoWait('modern__long-export', '{"format":"xml"}', '--json');
    expect(out.code, out.stderr).toBe(0);
    const handle = (JSON.parse(out.stdout) as { task: { id: string; state: string } }).task;
    expect(handle.id).toMatch(TASK_ID);
    expect(handle.state).toBe('working');
    const early = await runCli(['tasks', 'result', handle.id], env);
    // The task runs 3 s: on a loaded machine two CLI processes can take that long, and the task has
    // ended by the time the second asks (the flake this test had). Only then may its result be there.
    if (early.code === 0) expect(Date.now() - asked).toBeGreaterThan(3_000);
    else expect(early.stderr).toContain('error: conflict');

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
    const out = await callNoWait('modern__never-ends', '{}');
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
    const out = await callNoWait('modern__never-ends', '{}', '--json');
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
    const call = startCli(
      ['call', '--agent', 'reports', '--task', '--timeout-ms', '500', 'modern__never-ends', '{}'],
      env,
    );
    try {
      const id = await eventually(
        async () => /task (tsk_[a-z2-7]{24}) working/.exec(call.stderr)?.[1],
        30_000,
        'the call waiting for its task',
      );
      await new TaskClient(system.nc, system.subjects).cancelTask(system.account, id);
      expect(await call.exited).toBe(1);
      expect(call.stderr).toContain(`task ${id} cancelled`);
      expect(call.stderr).toContain('error: cancelled');
      expect(call.stdout).toBe('');
    } finally {
      call.kill();
    }
  });

  it('through the API (no NATS) a required tool (2025-11-25) is a task: the call waits for the report, reading the task actions', async () => {
    const noNats = { ...env, MCPX_NATS_URL: '' };
    // The bound leaves the task's creation time on a loaded box; the research outlives it or not.
    const waited = await runCli(
      ['call', '--agent', 'reports', '--timeout-ms', '2500', 'every__simulate-research-query', '{"topic":"tides"}'],
      noNats,
    );
    expect(waited.code, waited.stderr).toBe(0);
    expect(waited.stdout).toContain('# Research Report: tides');
    const listed = await runCli(['tasks', 'list', '--agent', 'reports', '--json'], noNats);
    expect(listed.code, listed.stderr).toBe(0);
    const id = (JSON.parse(listed.stdout) as { tasks: Array<{ id: string; tool: string }> }).tasks.find(
      (t) => t.tool === 'every__simulate-research-query',
    )?.id;
    expect(id, listed.stdout).toBeDefined();
    // Past the bound, the wait's status lines name the task.
    if (waited.stderr.includes('task tsk_')) expect(waited.stderr).toContain(`task ${id!} completed`);
    // The same task, read through the actions (GetTask, GetTaskResult) and over NATS, agrees.
    const shown = await runCli(['tasks', 'show', id!, '--json'], noNats);
    expect(shown.code, shown.stderr).toBe(0);
    const task = (JSON.parse(shown.stdout) as { task: { state: string; tool: string } }).task;
    expect(task).toMatchObject({ state: 'completed', tool: 'every__simulate-research-query' });
    expect(task).toEqual(
      (JSON.parse((await runCli(['tasks', 'show', id!, '--json'], env)).stdout) as { task: unknown }).task,
    );
    const result = await runCli(['tasks', 'result', id!, '--json'], noNats);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({
      taskId: id,
      text: expect.stringContaining('# Research Report: tides'),
    });
  });

  it('through the API: --no-wait prints the handle; tasks list, show, result (conflict while open) and cancel go through the actions', async () => {
    const noNats = { ...env, MCPX_NATS_URL: '' };
    const out = await runCli(
      [
        'call',
        '--agent',
        'reports',
        '--no-wait',
        '--timeout-ms',
        '3000',
        'every__simulate-research-query',
        '{"topic":"reefs","ambiguous":true}',
      ],
      noNats,
    );
    expect(out.code, out.stderr).toBe(0);
    const id = TASK_ID.exec(out.stdout)?.[1];
    expect(id, out.stdout).toBeDefined();
    expect(out.stdout).toContain(`mcpx tasks result ${id!}`);
    expect(out.stdout).not.toContain('NATS');
    const list = await runCli(['tasks', 'list', '--agent', 'reports', '--limit', '50', '--json'], noNats);
    expect(list.code, list.stderr).toBe(0);
    expect((JSON.parse(list.stdout) as { tasks: Array<{ id: string }> }).tasks.map((t) => t.id)).toContain(id);
    // It waits for a person's answer: its result is not there yet.
    const early = await runCli(['tasks', 'result', id!], noNats);
    expect(early.code).toBe(1);
    expect(early.stderr).toContain('error: conflict');
    const cancelled = await runCli(['tasks', 'cancel', id!], noNats);
    expect(cancelled.code, cancelled.stderr).toBe(0);
    expect(cancelled.stdout.trim()).toBe(`task ${id!}: cancelled`);
    const result = await runCli(['tasks', 'result', id!], noNats);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('error: cancelled');
    // Another account's key, through the API: not_found, as a task that never was.
    const otherKey = join(dir, 'other-api-key.json');
    writeFileSync(otherKey, JSON.stringify(generateKeyPair()), { mode: 0o600 });
    for (const verb of ['show', 'cancel', 'result']) {
      const res = await runCli(['tasks', verb, id!], { ...noNats, MCPX_KEY_FILE: otherKey });
      expect(res.code, `${verb}: ${res.stdout}`).toBe(1);
      expect(res.stderr).toContain('error: not_found');
    }
  });

  it('without NATS, --task is refused with how to use it; a bad id is a usage error', async () => {
    const noNats = { ...env, MCPX_NATS_URL: '' };
    const call = await runCli(
      ['call', '--agent', 'reports', '--task', 'modern__long-export', '{"format":"pdf"}'],
      noNats,
    );
    expect(call.code).toBe(2);
    expect(call.stderr).toContain('--task goes over NATS');
    for (const mode of [noNats, env]) {
      const bad = await runCli(['tasks', 'show', 'tsk_../../x'], mode);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain('is not a task id');
    }
  });
});
