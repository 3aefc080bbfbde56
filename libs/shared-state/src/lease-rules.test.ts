import { describe, expect, it } from 'vitest';
import { MAX_TOKEN_BATCH, idleShare, leaseNeeds, shouldPrefetch, splitIdleSlots, tokenBatch } from './lease-rules.js';

describe('tokenBatch', () => {
  it('leases one token at a time below 80 per second (exact), about 50 ms of the rate above, at most 64', () => {
    expect(tokenBatch(0.5)).toBe(1);
    expect(tokenBatch(1)).toBe(1);
    expect(tokenBatch(79)).toBe(3);
    expect(tokenBatch(100)).toBe(5);
    expect(tokenBatch(1_000)).toBe(50);
    expect(tokenBatch(1_000_000)).toBe(MAX_TOKEN_BATCH);
  });

  it('never leases more than the bucket holds (one second of the rate)', () => {
    for (const rate of [1, 2, 3, 19, 20, 21, 40, 80, 1280, 5000])
      expect(tokenBatch(rate)).toBeLessThanOrEqual(Math.max(1, Math.floor(rate)));
  });
});

describe('leaseNeeds: a round trip only when the process holds nothing to admit from', () => {
  const held = { maxConcurrency: 4, ratePerSecond: 10, tokens: 3, freeSlots: 1 };

  it('admits from a held token and a free slot', () => {
    expect(leaseNeeds(held)).toEqual({ token: false, slot: false });
  });

  it('leases a token when none is left, a slot when none is free', () => {
    expect(leaseNeeds({ ...held, tokens: 0 })).toEqual({ token: true, slot: false });
    expect(leaseNeeds({ ...held, tokens: 0.5 })).toEqual({ token: true, slot: false });
    expect(leaseNeeds({ ...held, freeSlots: 0 })).toEqual({ token: false, slot: true });
    expect(leaseNeeds({ ...held, tokens: 0, freeSlots: 0 })).toEqual({ token: true, slot: true });
  });

  it('needs nothing of a limit that is off', () => {
    expect(leaseNeeds({ maxConcurrency: 0, ratePerSecond: 0, tokens: 0, freeSlots: 0 })).toEqual({
      token: false,
      slot: false,
    });
    expect(leaseNeeds({ maxConcurrency: 0, ratePerSecond: 5, tokens: 0, freeSlots: 0 })).toEqual({
      token: true,
      slot: false,
    });
    expect(leaseNeeds({ maxConcurrency: 2, ratePerSecond: 0, tokens: 0, freeSlots: 0 })).toEqual({
      token: false,
      slot: true,
    });
  });
});

describe('shouldPrefetch', () => {
  it('refills ahead once half a batch is spent, one refill at a time', () => {
    expect(shouldPrefetch(30, 64, false)).toBe(true);
    expect(shouldPrefetch(32, 64, false)).toBe(false);
    expect(shouldPrefetch(10, 64, true)).toBe(false);
  });

  it('never refills a small batch ahead (it is leased on demand, so a small rate stays exact)', () => {
    expect(shouldPrefetch(0, 3, false)).toBe(false);
    expect(shouldPrefetch(1, 4, false)).toBe(true);
  });
});

describe('splitIdleSlots', () => {
  it('gives back the slots held longer than the hold time, keeps the others for the next calls', () => {
    const free = [
      { slot: 'a', since: 0 },
      { slot: 'b', since: 800 },
      { slot: 'c', since: 801 },
    ];
    const { idle, kept } = splitIdleSlots(free, 1_000, 200);
    expect(idle.map((f) => f.slot)).toEqual(['a', 'b']);
    expect(kept.map((f) => f.slot)).toEqual(['c']);
    expect(splitIdleSlots([], 1_000, 200)).toEqual({ idle: [], kept: [] });
  });

  it('keeps the newest slots of its share (an eighth of the cap) for the longer hold, the rest for the short one', () => {
    expect(idleShare(3)).toBe(0);
    expect(idleShare(16)).toBe(2);
    expect(idleShare(64)).toBe(8);
    const free = [
      { slot: 'a', since: 0 },
      { slot: 'b', since: 100 },
      { slot: 'c', since: 200 },
    ];
    const share = { count: 2, holdMs: 1_000 };
    // At 500 ms: a is past the short hold and outside the share; b and c are the share.
    const at500 = splitIdleSlots(free, 500, 200, share);
    expect(at500.idle.map((f) => f.slot)).toEqual(['a']);
    expect(at500.kept.map((f) => f.slot)).toEqual(['b', 'c']);
    // Past the longer hold, the share goes back too.
    expect(splitIdleSlots(free, 1_150, 200, share).idle.map((f) => f.slot)).toEqual(['a', 'b']);
    // No share: the short hold for every slot, as before.
    expect(splitIdleSlots(free, 500, 200).idle.map((f) => f.slot)).toEqual(['a', 'b', 'c']);
  });
});
