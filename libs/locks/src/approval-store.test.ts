import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { ApprovalStore, PendingApprovalsFullError } from './approval-store.js';

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const TTL_MS = 60_000;

/** A store on a clock the test moves (no waiting), with a prefix of its own. */
function storeAt(redis: Redis): { store: ApprovalStore; clock: { now: number } } {
  const clock = { now: 1_700_000_000_000 };
  return { store: new ApprovalStore(redis, `mcpx-t${randomBytes(4).toString('hex')}:`, { ttlMs: TTL_MS, now: () => clock.now }), clock };
}

const binding = { agent: 'ag', run: 'r1', tool: 'db__drop_table', argsHash: 'a'.repeat(64) };
const input = { ...binding, account: 'acct', server: 'db', remoteName: 'drop_table', arguments: { table: 't' } };

describe('ApprovalStore windows (real Redis)', () => {
  const redis = new Redis(redisUrl);
  afterAll(async () => {
    await redis.quit();
  });

  it('waits up to the TTL for a decision; an approval is usable for the TTL from the decision, once', async () => {
    const { store, clock } = storeAt(redis);
    const created = await store.create(input);
    expect(created.expiresAt).toBe(created.createdAt + TTL_MS);

    // Decided in the pending window's last millisecond.
    clock.now = created.expiresAt - 1;
    const decided = await store.decide('acct', created.id, 'approved', 'owner');
    expect(decided.ok).toBe(true);
    if (!decided.ok) return;
    expect(decided.record.expiresAt).toBe(decided.record.decidedAt! + TTL_MS);

    // Past creation + TTL, within decision + TTL: the call may go ahead, once.
    clock.now = created.expiresAt + TTL_MS / 2;
    expect(await store.consume('acct', created.id, { ...binding, run: 'other' })).toMatchObject({ ok: false, reason: 'mismatch' });
    expect(await store.consume('acct', created.id, binding)).toMatchObject({ ok: true, record: { status: 'used' } });
    expect(await store.consume('acct', created.id, binding)).toMatchObject({ ok: false, reason: 'used' });
  });

  it('the per-agent cap counts and records in one step: 30 racing creations record exactly the cap; a decision or an expiry frees a place', async () => {
    const { store, clock } = storeAt(redis);
    const cap = { maxPendingPerAgent: 3 };
    const raced = await Promise.allSettled(Array.from({ length: 30 }, () => store.create(input, cap)));
    const created = raced.filter((r) => r.status === 'fulfilled').map((r) => (r as PromiseFulfilledResult<{ id: string }>).value);
    expect(created).toHaveLength(3);
    for (const r of raced) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(PendingApprovalsFullError);
    expect(await store.listPending('acct')).toHaveLength(3);
    // Another agent of the account has places of its own.
    await store.create({ ...input, agent: 'other' }, cap);
    // A denial frees one place.
    await store.decide('acct', created[0]!.id, 'denied', 'owner');
    await store.create(input, cap);
    await expect(store.create(input, cap)).rejects.toBeInstanceOf(PendingApprovalsFullError);
    // Expired approvals no longer count.
    clock.now += TTL_MS;
    await store.create(input, cap);
  });

  it('an approval not used within the TTL of its decision expires', async () => {
    const { store, clock } = storeAt(redis);
    const created = await store.create(input);
    clock.now = created.expiresAt - 1;
    const decided = await store.decide('acct', created.id, 'approved', 'owner');
    if (!decided.ok) throw new Error(`not decided: ${decided.reason}`);
    clock.now = decided.record.expiresAt;
    expect(await store.consume('acct', created.id, binding)).toMatchObject({ ok: false, reason: 'expired' });
  });

  it('a decision after the pending window is refused; a denial keeps the pending deadline', async () => {
    const { store, clock } = storeAt(redis);
    const late = await store.create(input);
    clock.now = late.expiresAt;
    expect(await store.decide('acct', late.id, 'approved', 'owner')).toMatchObject({ ok: false, reason: 'expired' });

    const denied = await store.create(input);
    clock.now = denied.expiresAt - 1;
    expect(await store.decide('acct', denied.id, 'denied', 'owner')).toMatchObject({ ok: true, record: { status: 'denied', expiresAt: denied.expiresAt } });
    expect(await store.consume('acct', denied.id, binding)).toMatchObject({ ok: false, reason: 'denied' });
  });
});

describe('ApprovalStore.countPending: approvals waiting across accounts (real Redis)', () => {
  const redis = new Redis(redisUrl);
  afterAll(async () => {
    await redis.quit();
  });

  it("counts every account's pending approvals; a decision or the deadline takes one off", async () => {
    const { store, clock } = storeAt(redis);
    expect(await store.countPending()).toBe(0);
    const a = await store.create(input);
    await store.create({ ...input, account: 'other' });
    clock.now += 1_000;
    await store.create(input);
    expect(await store.countPending()).toBe(3);
    expect((await store.decide('acct', a.id, 'denied', 'owner')).ok).toBe(true);
    expect(await store.countPending()).toBe(2);
    // Past the first two's deadline, before the third's.
    clock.now += TTL_MS - 500;
    expect(await store.countPending()).toBe(1);
    clock.now += 1_000;
    expect(await store.countPending()).toBe(0);
  });
});
