import { beforeAll, describe, expect, it } from 'vitest';
import type { TestMcpServer } from '../servers/index.js';
import { cliEnvFor, runCli } from '../support/cli.js';
import { serviceUrls } from '../support/env.js';
import type { ProxySystem } from '../support/proxy-system.js';
import { eventually } from '../support/system.js';
import { approvalSystemPerSuite } from './approval-tools.js';

/** A human in the loop from the terminal: a call that stops, approvals list / approve / deny, and --wait-approval. */
describe('mcpx approvals and call --wait-approval (a modern server)', { timeout: 180_000 }, () => {
  let system: ProxySystem;
  let upstream: TestMcpServer;
  let env: Record<string, string>;

  approvalSystemPerSuite((started) => ({ system, upstream } = started), { agent: 'ops', era: 'modern' });

  beforeAll(async () => {
    ({ env } = cliEnvFor(system.api, {
      MCPX_NATS_URL: serviceUrls().nats,
      MCPX_NATS_PREFIX: system.env.NATS_PREFIX ?? '',
    }));
  });

  it('stops a destructive call, lists it, approves it, and the re-sent call runs; a denied one is refused', async () => {
    const stopped = await runCli(
      ['call', '--agent', 'ops', '--run', 'cli-r1', 'db__drop_table', '{"table":"users"}', '--json'],
      env,
    );
    expect(stopped.code).not.toBe(0);
    const id = /(apr_[A-Za-z0-9_-]+)/.exec(stopped.stderr)?.[1];
    expect(id, stopped.stderr).toBeDefined();

    const list = await runCli(['approvals', 'list'], env);
    expect(list.stdout).toContain(`${id!}  db__drop_table  run cli-r1  agent ops  expires`);
    expect(list.stdout).toContain('arguments: {"table":"users"}');
    const approved = await runCli(['approvals', 'approve', id!], env);
    expect(approved.stdout.trim()).toBe(`approved ${id!}: re-send the call with --run cli-r1 --approval ${id!}`);
    const ran = await runCli(
      ['call', '--agent', 'ops', '--run', 'cli-r1', '--approval', id!, 'db__drop_table', '{"table":"users"}'],
      env,
    );
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).toContain('dropped users');

    const again = await runCli(
      ['call', '--agent', 'ops', '--run', 'cli-r2', 'db__drop_table', '{"table":"orders"}'],
      env,
    );
    const second = /(apr_[A-Za-z0-9_-]+)/.exec(again.stderr)?.[1];
    expect((await runCli(['approvals', 'deny', second!], env)).stdout.trim()).toBe(`denied ${second!}`);
    const refused = await runCli(
      ['call', '--agent', 'ops', '--run', 'cli-r2', '--approval', second!, 'db__drop_table', '{"table":"orders"}'],
      env,
    );
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('denied');
  });

  it('call --wait-approval waits for the owner and prints the result once approved', async () => {
    const before = upstream.stats.calls;
    const waiting = runCli(
      ['call', '--agent', 'ops', '--wait-approval', '60', 'db__drop_table', '{"table":"sessions"}'],
      env,
    );
    const approval = await eventually(
      async () => {
        const res = await runCli(['approvals', 'list', '--json'], env);
        return (
          JSON.parse(res.stdout) as { approvals: Array<{ id: string; status: string; arguments?: { table?: string } }> }
        ).approvals.find((a) => a.status === 'pending' && a.arguments?.table === 'sessions');
      },
      30_000,
      'the waiting call to stop',
    );
    expect(upstream.stats.calls).toBe(before);
    expect((await runCli(['approvals', 'approve', approval.id], env)).code).toBe(0);
    const done = await waiting;
    expect(done.code, done.stderr).toBe(0);
    expect(done.stderr).toContain(`waiting up to 60 s for a human to approve ${approval.id}`);
    expect(done.stdout).toContain('dropped sessions');
    expect(upstream.stats.calls).toBe(before + 1);

    const bad = await runCli(['call', '--agent', 'ops', '--wait-approval', 'soon', 'db__echo', '{"text":"x"}'], env);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('--wait-approval takes seconds');
  });
});
