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
    const a = held.transaction(db, async () => {
      await first.wait;
      order.push('a');
    });
    const b = held.transaction(db, async () => {
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
    const a = held.transaction(db, () => first.wait);
    const b = held.transaction(db, async () => 'b').catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(2_000);
    const refused = await b;
    expect(refused).toBeInstanceOf(WireError);
    expect(refused).toMatchObject({ code: 'unavailable', details: { bound: 'held_entries', limit: 1 } });
    first.open();
    await a;
    // The refused one left the line: a new one runs at once.
    await expect(held.transaction(db, async () => 'c')).resolves.toBe('c');
    expect(held.inUse).toBe(0);
  });

  it('a failed transaction frees its slot', async () => {
    const held = new HeldEntries(1);
    await expect(held.transaction(db, () => Promise.reject(new Error('refused')))).rejects.toThrow('refused');
    await expect(held.transaction(db, async () => 'next')).resolves.toBe('next');
  });

  it('takes only a positive whole number of slots', () => {
    expect(() => new HeldEntries(0)).toThrow();
    expect(() => new HeldEntries(1.5)).toThrow();
  });
});
