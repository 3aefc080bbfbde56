import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEverythingServer, type EverythingServer } from '../servers/index.js';
import { cliEnvFor, runCli, type CliResult } from '../support/cli.js';
import { ProxySystem } from '../support/proxy-system.js';
import { readmeCommandBlock, shellWords } from '../support/fixtures/readme-tour.js';
import { eventually } from '../support/system.js';

/** The `mcpx` commands of the README's tasks walkthrough (its first shell block of them), in order. */
function tasksTour(): string[][] {
  return readmeCommandBlock('## Tasks: calls that outlive the call bound', 'tasks')
    .filter((l) => l.startsWith('npm run mcpx -- '))
    .map((l) => shellWords(l).slice(4));
}

/**
 * Issue 23's "done when", from the README itself: its tasks walkthrough run as printed, through the
 * API with the account's key (no NATS), against the real system and server-everything (its
 * `simulate-research-query`, a 2025-11-25 `required` task tool): the plain call prints the report;
 * the ambiguous one waits on the server's question, `mcpx inputs answer` answers it, and the report
 * printed uses the answer; `tasks list` shows both tasks.
 */
describe("the README's tasks walkthrough, as printed", () => {
  let system: ProxySystem;
  let everything: EverythingServer;
  let env: Record<string, string>;

  beforeAll(async () => {
    [system, everything] = await Promise.all([ProxySystem.start(), startEverythingServer('streamableHttp')]);
    await system.setServer('everything', everything.url);
    await system.createAgent('helper', ['everything'], 10);
    ({ env } = cliEnvFor(system.api));
  }, 120_000);

  afterAll(async () => {
    await system?.stop();
    await everything?.close();
  });

  it('the report; the ambiguous question answered with inputs answer and the report using it; tasks list', async () => {
    const steps = tasksTour();
    expect(steps.map((a) => a.slice(0, 2).join(' '))).toEqual([
      'call --agent',
      'call --agent',
      'inputs list',
      'inputs answer',
      'tasks list',
    ]);
    const [plain, ambiguous, list, answer, tasks] = steps as [string[], string[], string[], string[], string[]];
    const report = await runCli(plain, env);
    expect(report.code, report.stderr).toBe(0);
    expect(report.stdout).toContain('Research Report: tides');

    // The ambiguous call waits (a second terminal's commands run meanwhile).
    const waiting: Promise<CliResult> = runCli(ambiguous, env);
    const inputId = await eventually(
      async () => /(inp_[A-Za-z0-9_-]+)/.exec((await runCli(list, env)).stdout)?.[1],
      90_000,
      "the task's question in mcpx inputs list",
    );
    const answered = await runCli(
      answer.map((a) => a.replace('inp_…', inputId)),
      env,
    );
    expect(answered.code, answered.stderr).toBe(0);
    const done = await waiting;
    expect(done.code, done.stderr).toBe(0);
    const id = /task (tsk_[a-z2-7]{24}) input_required/.exec(done.stderr)?.[1];
    expect(id, done.stderr).toBeDefined();
    expect(done.stdout).toContain('Research Report: python (snake)');

    const listed = await runCli(tasks, env);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain(`${id!}  completed  everything__simulate-research-query  agent helper`);
    expect(listed.stdout.match(/everything__simulate-research-query/g)).toHaveLength(2);
  }, 300_000);
});
