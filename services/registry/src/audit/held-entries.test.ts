import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Db } from '@mcpx/db';
import { WireError } from '@mcpx/contracts';
import { HeldEntries } from './held-entries.js';

/** A stand-in for the pool's transactions: the decision logic only (the attack runs against Postgres in test/security). */
const db = { transaction: () => ({ execute: <T>(fn: (trx: unknown) => Promise<T>) => fn({}) }) } as unknown as Db;

function gate(): { open: () => void; wait: Promise<void> } {
  let open!: () => void;
  const wait = new Promise<void>((r) => (open = r));
  return { open, wait };
}

describe('HeldEntries', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('lets `slots` transactions wait at once; the next one in line takes a freed slot', async () => {
    const held = new HeldEntries(1);
    const first = gate();
    const order: string[] = [];
    const a = held.transaction(db, 'acct', async () => {
      await first.wait;
      order.push('a');
    });
    const b = held.transaction(db, 'acct', async () => {
      order.push('b');
    });
    await Promise.resolve();
    expect(held.inUse).toBe(1);
    first.open();
    await Promise.all([a, b]);
    expect(order).toEqual(['a', 'b']);
    expect(held.inUse).toBe(0);
  });

  it('refuses one that waited 2 s for a slot, unavailable and retryable, and frees its place in line', async () => {
    vi.useFakeTimers();
    const held = new HeldEntries(1);
    const first = gate();
    const a = held.transaction(db, 'acct', () => first.wait);
    const b = held.transaction(db, 'acct', async () => 'b').catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(2_000);
    const refused = await b;
    expect(refused).toBeInstanceOf(WireError);
    expect(refused).toMatchObject({ code: 'unavailable', details: { bound: 'held_entries', limit: 1 } });
    first.open();
    await a;
    // The refused one left the line: a new one runs at once.
    await expect(held.transaction(db, 'acct', async () => 'c')).resolves.toBe('c');
    expect(held.inUse).toBe(0);
  });

  it('a failed transaction frees its slot', async () => {
    const held = new HeldEntries(1);
    await expect(held.transaction(db, 'acct', () => Promise.reject(new Error('refused')))).rejects.toThrow('refused');
    await expect(held.transaction(db, 'acct', async () => 'next')).resolves.toBe('next');
  });

  it("holds one account to half the slots: another account's change takes the one left, ahead of the first's next", async () => {
    const held = new HeldEntries(4);
    expect(held.perAccount).toBe(2);
    const stalled = gate();
    const order: string[] = [];
    const flood = Array.from({ length: 4 }, (_, i) =>
      held.transaction(db, 'flood', async () => {
        order.push(`flood${i}`);
        await stalled.wait;
      }),
    );
    await Promise.resolve();
    // Two of the flood's hold slots; its other two wait in line though two slots are free.
    expect(held.inUse).toBe(2);
    expect(order).toEqual(['flood0', 'flood1']);
    const other = held.transaction(db, 'other', async () => {
      order.push('other');
    });
    await other;
    expect(order).toEqual(['flood0', 'flood1', 'other']);
    stalled.open();
    await Promise.all(flood);
    expect(order).toEqual(['flood0', 'flood1', 'other', 'flood2', 'flood3']);
    expect(held.inUse).toBe(0);
  });

  it('refuses an account past its share after its 2 s, naming the share, while the slots are not all taken', async () => {
    vi.useFakeTimers();
    const held = new HeldEntries(4);
    const stalled = gate();
    const first = [
      held.transaction(db, 'flood', () => stalled.wait),
      held.transaction(db, 'flood', () => stalled.wait),
    ];
    const third = held.transaction(db, 'flood', async () => 'third').catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(2_000);
    const refused = await third;
    expect(refused).toBeInstanceOf(WireError);
    expect(refused).toMatchObject({
      code: 'unavailable',
      details: { bound: 'held_entries', scope: 'account', limit: 2, retryAfterMs: 1_000 },
    });
    expect((refused as WireError).message).toContain('nothing was written');
    expect(held.inUse).toBe(2);
    stalled.open();
    await Promise.all(first);
  });

  it('one slot is one for every account: the share cannot be less than one', () => {
    expect(new HeldEntries(1).perAccount).toBe(1);
    expect(new HeldEntries(3).perAccount).toBe(2);
  });

  it('takes only a positive whole number of slots', () => {
    expect(() => new HeldEntries(0)).toThrow();
    expect(() => new HeldEntries(1.5)).toThrow();
  });
});
