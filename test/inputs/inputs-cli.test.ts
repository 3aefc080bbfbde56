import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InputMcpServer } from '../servers/input-mcp-server.js';
import { cliEnvFor, runCli } from '../support/cli.js';
import type { ProxySystem } from '../support/proxy-system.js';
import { eventually } from '../support/system.js';
import type { InputRequestView } from '@mcpx/contracts';
import { pendingInputs, startInputSystem } from './input-system.js';

/** A server's question from the terminal: `mcpx call` shows it, `mcpx inputs answer` lets the call finish. */
describe('mcpx inputs and call --wait-input', () => {
  let system: ProxySystem;
  let upstream: InputMcpServer;
  let env: Record<string, string>;
  /** The pending request whose first question is `message`, read through the API: each mcpx run is a node process of its own, slow on a loaded box, and a waiting `mcpx call` has only its own bound. */
  const asking = async (message: string): Promise<InputRequestView | undefined> =>
    (await pendingInputs(system)).find((r) => (r.requests[0] as { message?: string } | undefined)?.message === message);

  beforeAll(async () => {
    ({ system, upstream } = await startInputSystem());
    ({ env } = cliEnvFor(system.api));
  });

  afterAll(async () => {
    await system?.stop();
    await upstream?.close();
  });

  // Each mcpx run is a node process of its own compiling the CLI: minutes on a loaded box (each test's bound is below).
  it('mcpx call shows "Deploy to prod?" and its id; inputs answer --accept confirm=true; the re-sent call finishes', async () => {
    const stopped = await runCli(
      ['call', '--agent', 'ops-agent', '--run', 'cli-1', 'ops__deploy', '{"env":"prod"}'],
      env,
    );
    expect(stopped.code).toBe(1);
    expect(stopped.stderr).toContain('Deploy to prod?');
    const id = /(inp_[A-Za-z0-9_-]+)/.exec(stopped.stderr)?.[1];
    expect(id, stopped.stderr).toBeDefined();
    expect(stopped.stderr).toContain('confirm: true | false  (Confirm deployment)');
    expect(stopped.stderr).toContain(`--run cli-1 --input ${id!}`);

    const list = await runCli(['inputs', 'list'], env);
    expect(list.stdout).toContain(`${id!}  ops__deploy  run cli-1  agent ops-agent  round`);
    expect(list.stdout).toContain('[confirm] Deploy to prod?');

    const wrong = await runCli(['inputs', 'answer', id!, '--accept', 'confirm=maybe'], env);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('takes true or false');
    const answered = await runCli(['inputs', 'answer', id!, '--accept', 'confirm=true'], env);
    expect(answered.code, answered.stderr).toBe(0);
    expect(answered.stdout).toContain(`answered ${id!}`);

    const ran = await runCli(
      ['call', '--agent', 'ops-agent', '--run', 'cli-1', '--input', id!, 'ops__deploy', '{"env":"prod"}'],
      env,
    );
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).toContain('Deployed to prod');
  }, 300_000);

  it('call --wait-input waits, shows the question, and finishes once the person answers; a declined one fails as the server says', async () => {
    const waiting = runCli(['call', '--agent', 'ops-agent', '--wait-input', '60', 'ops__deploy', '{"env":"eu"}'], env);
    const id = await eventually(async () => (await asking('Deploy to eu?'))?.id, 60_000, 'the waiting call to ask');
    expect((await runCli(['inputs', 'answer', id, '--accept', 'confirm=true'], env)).code).toBe(0);
    const done = await waiting;
    expect(done.code, done.stderr).toBe(0);
    expect(done.stderr).toContain(`ops__deploy asks (input request ${id}, round 1):`);
    expect(done.stderr).toContain('Deploy to eu?');
    expect(done.stdout).toContain('Deployed to eu');

    const declining = runCli(
      ['call', '--agent', 'ops-agent', '--wait-input', '60', 'ops__deploy', '{"env":"us"}'],
      env,
    );
    const second = await eventually(async () => (await asking('Deploy to us?'))?.id, 60_000, 'the second call to ask');
    expect((await runCli(['inputs', 'answer', second, '--decline'], env)).code).toBe(0);
    const declined = await declining;
    expect(declined.code).toBe(1);
    expect(declined.stderr).toContain('Deployment to us cancelled by the operator');

    const bad = await runCli(
      ['call', '--agent', 'ops-agent', '--wait-input', 'soon', 'ops__deploy', '{"env":"x"}'],
      env,
    );
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--wait-input takes seconds');
  }, 300_000);

  it('several questions in one round: each is answered with --key; a URL question with --done', async () => {
    const waiting = runCli(['call', '--agent', 'ops-agent', '--wait-input', '90', 'ops__provision', '{}'], env);
    const list = (): Promise<InputRequestView[]> => pendingInputs(system);
    const first = await eventually(
      async () => (await list()).find((r) => r.requests[0]?.key === 'name'),
      60_000,
      'round 1',
    );
    expect((await runCli(['inputs', 'answer', first.id, '--accept', 'name=warehouse'], env)).code).toBe(0);
    const second = await eventually(async () => (await list()).find((r) => r.round === 2), 60_000, 'round 2');
    const which = await runCli(['inputs', 'answer', second.id, '--accept', 'region=eu-west-1'], env);
    expect(which.code).toBe(2);
    expect(which.stderr).toContain('name one with --key (region, tags)');
    expect(
      (await runCli(['inputs', 'answer', second.id, '--key', 'region', '--accept', 'region=us-east-1'], env)).stdout,
    ).toContain('still waiting for: tags');
    expect(
      (await runCli(['inputs', 'answer', second.id, '--key', 'tags', '--accept', 'tags=batch,pii'], env)).code,
    ).toBe(0);
    const done = await waiting;
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout).toContain('Provisioned warehouse in us-east-1 tagged batch,pii');

    const signIn = runCli(['call', '--agent', 'ops-agent', '--wait-input', '60', 'ops__sign_in', '{}'], env);
    const url = await eventually(
      async () => (await list()).find((r) => r.requests[0]?.key === 'login'),
      60_000,
      'the sign-in question',
    );
    const shown = await runCli(['inputs', 'list'], env);
    expect(shown.stdout).toContain('open in your browser: https://auth.example.com/login?flow=mcpx');
    expect((await runCli(['inputs', 'answer', url.id, '--done'], env)).code).toBe(0);
    const signedIn = await signIn;
    expect(signedIn.code, signedIn.stderr).toBe(0);
    expect(signedIn.stdout).toContain('Signed in');
    expect(upstream.stats.calls).toBeGreaterThan(0);
  }, 300_000);
});
