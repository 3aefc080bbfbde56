import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { keysUnder, race, suiteRedis, testClock } from './redis-keys.test-support.js';
import { ApprovalStore, PendingApprovalsFullError } from './approval-store.js';

const TTL_MS = 60_000;

/** A store on a clock the test moves (no waiting), with a prefix of its own. */
function storeAt(redis: Redis): { store: ApprovalStore; clock: { now: number }; prefix: string } {
  const { clock, prefix } = testClock();
  return { store: new ApprovalStore(redis, prefix, { ttlMs: TTL_MS, now: () => clock.now }), clock, prefix };
}

const binding = { agent: 'ag', run: 'r1', tool: 'db__drop_table', argsHash: 'a'.repeat(64) };
const input = { ...binding, account: 'acct', server: 'db', remoteName: 'drop_table', arguments: { table: 't' } };

describe('ApprovalStore windows (real Redis)', () => {
  const redis = suiteRedis();

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
    expect(await store.consume('acct', created.id, { ...binding, run: 'other' })).toMatchObject({
      ok: false,
      reason: 'mismatch',
    });
    expect(await store.consume('acct', created.id, binding)).toMatchObject({ ok: true, record: { status: 'used' } });
    expect(await store.consume('acct', created.id, binding)).toMatchObject({ ok: false, reason: 'used' });
  });

  it('the per-agent cap counts and records in one step: 30 racing creations record exactly the cap; a decision or an expiry frees a place', async () => {
    const { store, clock } = storeAt(redis);
    const cap = { maxPendingPerAgent: 3 };
    const { created, refused } = await race(30, () => store.create(input, cap));
    expect(created).toHaveLength(3);
    for (const reason of refused) expect(reason).toBeInstanceOf(PendingApprovalsFullError);
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

  it('the per-account cap counts every agent of the account in the same step: 40 racing creations over 20 agents record exactly the cap; the refusal names the account, writes nothing, and leaves other accounts alone', async () => {
    const { store, clock, prefix } = storeAt(redis);
    const caps = { maxPendingPerAgent: 3, maxPendingPerAccount: 5 };
    const { created, refused } = await race(40, (i) => store.create({ ...input, agent: `ag${i % 20}` }, caps));
    expect(created).toHaveLength(5);
    for (const reason of refused) {
      expect(reason).toBeInstanceOf(PendingApprovalsFullError);
      expect(reason).toMatchObject({ scope: 'account', max: 5 });
    }
    expect(await store.listPending('acct')).toHaveLength(5);
    expect(await store.countPending()).toBe(5);

    // A refusal writes nothing: no record, and no index grows.
    const before = await keysUnder(redis, prefix);
    await expect(store.create({ ...input, agent: 'fresh' }, caps)).rejects.toMatchObject({ scope: 'account', max: 5 });
    expect(await keysUnder(redis, prefix)).toEqual(before);

    // Another account has a cap of its own.
    await store.create({ ...input, account: 'other', agent: 'fresh' }, caps);
    // A decision frees one of the account's places, for any of its agents.
    await store.decide('acct', created[0]!.id, 'approved', 'owner');
    await store.create({ ...input, agent: 'fresh' }, caps);
    await expect(store.create({ ...input, agent: 'fresh2' }, caps)).rejects.toMatchObject({ scope: 'account' });
    // Expired approvals no longer count.
    clock.now += TTL_MS;
    await store.create({ ...input, agent: 'fresh2' }, caps);
  });

  it('names the agent when its own queue is full first, and the account when the account is; 0 is no cap', async () => {
    const { store } = storeAt(redis);
    const caps = { maxPendingPerAgent: 2, maxPendingPerAccount: 3 };
    await store.create(input, caps);
    await store.create(input, caps);
    await expect(store.create(input, caps)).rejects.toMatchObject({
      name: 'PendingApprovalsFullError',
      scope: 'agent',
      max: 2,
    });
    await store.create({ ...input, agent: 'b' }, caps);
    await expect(store.create({ ...input, agent: 'c' }, caps)).rejects.toMatchObject({ scope: 'account', max: 3 });
    await store.create({ ...input, agent: 'c' }, { maxPendingPerAgent: 2, maxPendingPerAccount: 0 });
    expect(await store.listPending('acct')).toHaveLength(4);
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
    expect(await store.decide('acct', denied.id, 'denied', 'owner')).toMatchObject({
      ok: true,
      record: { status: 'denied', expiresAt: denied.expiresAt },
    });
    expect(await store.consume('acct', denied.id, binding)).toMatchObject({ ok: false, reason: 'denied' });
  });
});

describe('ApprovalStore.countPending: approvals waiting across accounts (real Redis)', () => {
  const redis = suiteRedis();

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

describe('ApprovalStore bytes and global caps: what one account, and all of them, keep waiting in Redis (real Redis)', () => {
  const redis = suiteRedis();

  /** Arguments that make a stored record of about `kib` KiB. */
  const sized = (kib: number, account = 'acct') => ({
    ...input,
    account,
    arguments: { blob: 'x'.repeat(kib * 1024) } as unknown,
  });

  it("the account's bytes budget counts the stored records: over it nothing is written and the refusal names the account and the bytes; a decision or the deadline gives the bytes back", async () => {
    const { store, clock, prefix } = storeAt(redis);
    const caps = { maxPendingBytesPerAccount: 100 * 1024 };
    const { created, refused } = await race(12, () => store.create(sized(30), caps));
    expect(created).toHaveLength(3);
    for (const reason of refused)
      expect(reason).toMatchObject({
        name: 'PendingApprovalsFullError',
        scope: 'account',
        unit: 'bytes',
        max: 100 * 1024,
      });

    const before = await keysUnder(redis, prefix);
    await expect(store.create(sized(30), caps)).rejects.toMatchObject({ scope: 'account', unit: 'bytes' });
    expect(await keysUnder(redis, prefix)).toEqual(before);
    // Small ones still fit; another account has a budget of its own.
    await store.create(sized(1), caps);
    await store.create(sized(30, 'other'), caps);

    // A decision gives its bytes back, and the kept record drops the arguments it showed.
    const decided = await store.decide('acct', created[0]!.id, 'denied', 'owner');
    expect(decided).toMatchObject({ ok: true, record: { argumentsJson: expect.stringContaining('xxxx') } });
    expect((await redis.get(`${prefix}approval:acct:${created[0]!.id}`))?.length).toBeLessThan(1024);
    await store.create(sized(30), caps);
    await expect(store.create(sized(30), caps)).rejects.toMatchObject({ unit: 'bytes' });
    // Past the deadline every byte is back.
    clock.now += TTL_MS;
    for (let i = 0; i < 3; i++) await store.create(sized(30), caps);
  });

  it("the global caps count every account's waiting approvals: a flood of fresh accounts stops at the cap, named global, and an earlier account's approval is still there to decide", async () => {
    const { store, prefix } = storeAt(redis);
    const mine = await store.create(input);
    const caps = { maxPendingPerAccount: 100, maxPendingGlobal: 20, maxPendingBytesGlobal: 0 };
    const flood = await race(60, (i) => store.create({ ...input, account: `fresh${i % 3}` }, caps));
    expect(flood.created).toHaveLength(19);
    for (const reason of flood.refused) expect(reason).toMatchObject({ scope: 'global', unit: 'count', max: 20 });
    const before = await keysUnder(redis, prefix);
    await expect(store.create({ ...input, account: 'fresh9' }, caps)).rejects.toMatchObject({ scope: 'global' });
    expect(await keysUnder(redis, prefix)).toEqual(before);
    expect((await store.listPending('acct')).map((r) => r.id)).toEqual([mine.id]);
    expect(await store.decide('acct', mine.id, 'approved', 'owner')).toMatchObject({ ok: true });
    // The decision made room.
    await store.create({ ...input, account: 'fresh9' }, caps);

    // The global bytes cap, the same way.
    const bytes = storeAt(redis).store;
    const byteCaps = { maxPendingBytesGlobal: 64 * 1024 };
    await bytes.create(sized(30, 'a'), byteCaps);
    await bytes.create(sized(30, 'b'), byteCaps);
    await expect(bytes.create(sized(30, 'c'), byteCaps)).rejects.toMatchObject({
      scope: 'global',
      unit: 'bytes',
      max: 64 * 1024,
    });
  });
});
