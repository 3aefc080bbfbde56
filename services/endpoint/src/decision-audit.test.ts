import { randomBytes } from 'node:crypto';
import { connect, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { serve } from '@mcpx/bus';
import {
  ErrorCodes,
  QueueGroups,
  WireError,
  decodeTokenDecisionAudit,
  makeSubjects,
  type Subjects,
  type TokenDecisionAudit,
} from '@mcpx/contracts';
import { createLogger } from '@mcpx/log';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DecisionAudit } from './decision-audit.js';

const natsUrl = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';

/**
 * The endpoint's request for the audit entry of a token holder's decision, against a real NATS:
 * a registry that does not answer is asked again a bounded number of times and the missing entry
 * is logged; a refusal is not asked again. (Against the real registry: test/endpoint.)
 */
describe('DecisionAudit (real NATS)', () => {
  let nc: NatsConnection;
  const lines: string[] = [];
  const log = createLogger('endpoint', { level: 'info', sink: (line) => void lines.push(line) });

  beforeAll(async () => {
    nc = await connect({ servers: natsUrl });
  });
  afterAll(async () => {
    await nc.drain();
  });

  const fresh = () => makeSubjects(`t${randomBytes(4).toString('hex')}.`);
  const errors = (): Array<Record<string, unknown>> =>
    lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.msg === 'audit entry of a token holder decision not written');
  /** A registry on `subjects` answering the audit request with `handle` (told which request it is, from 1), and its count. */
  const answering = async (
    subjects: Subjects,
    handle: (call: number) => Promise<{ audit: 'recorded' | 'already' }>,
  ): Promise<{ sub: Subscription; calls: () => number }> => {
    let calls = 0;
    const sub = serve(
      nc,
      subjects.registryTokenDecisionAudit,
      QueueGroups.registry,
      { decode: decodeTokenDecisionAudit, handle: () => handle(++calls) },
      log,
    );
    await nc.flush();
    return { sub, calls: () => calls };
  };

  it('no registry: asked again with backoff, then the missing entry is logged naming the approval; the decision is not undone (record resolves)', async () => {
    lines.length = 0;
    const subjects = fresh();
    // A silent registry: it takes every request and never answers.
    const seen: TokenDecisionAudit[] = [];
    const silent = nc.subscribe(subjects.registryTokenDecisionAudit, {
      callback: (_e, m) => void seen.push(decodeTokenDecisionAudit(m.data)),
    });
    await nc.flush();
    const audit = new DecisionAudit({ nc, subjects, log, attempts: 3, timeoutMs: 200, backoffMs: 20 });
    const started = Date.now();
    await expect(audit.record('acct', 'apr_1')).resolves.toBeUndefined();
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(seen).toEqual([
      { account: 'acct', approvalId: 'apr_1' },
      { account: 'acct', approvalId: 'apr_1' },
      { account: 'acct', approvalId: 'apr_1' },
    ]);
    expect(errors()).toHaveLength(1);
    expect(errors()[0]).toMatchObject({ account: 'acct', approval: 'apr_1', attempts: 3 });
    silent.unsubscribe();
  });

  it('a registry that answers the second request: the entry is recorded, nothing logged', async () => {
    lines.length = 0;
    const subjects = fresh();
    const registry = await answering(subjects, async (call) => {
      // The first request is lost (the registry was restarting): it answers too late.
      if (call === 1) await new Promise((r) => setTimeout(r, 400));
      return { audit: call === 1 ? ('recorded' as const) : ('already' as const) };
    });
    const audit = new DecisionAudit({ nc, subjects, log, attempts: 3, timeoutMs: 200, backoffMs: 20 });
    await expect(audit.record('acct', 'apr_2')).resolves.toEqual({ audit: 'already' });
    expect(registry.calls()).toBe(2);
    expect(errors()).toEqual([]);
    registry.sub.unsubscribe();
  });

  it('a refusal (nothing to audit) is not asked again, and is logged', async () => {
    lines.length = 0;
    const subjects = fresh();
    const registry = await answering(subjects, () =>
      Promise.reject(
        new WireError(ErrorCodes.conflict, 'approvalId: not decided by a token holder', { field: 'approvalId' }),
      ),
    );
    const audit = new DecisionAudit({ nc, subjects, log, attempts: 3, timeoutMs: 500, backoffMs: 20 });
    await expect(audit.record('acct', 'apr_3')).resolves.toBeUndefined();
    expect(registry.calls()).toBe(1);
    expect(errors()).toHaveLength(1);
    registry.sub.unsubscribe();
  });
});
