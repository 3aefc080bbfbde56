import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb } from '@mcpx/db';
import { AccountsRepository } from '../../services/registry/src/accounts/accounts.repository.js';
import { ApiClient } from '../support/api-client.js';
import { RegistryHarness } from '../support/registry-harness.js';

/**
 * A new key's first actions reaching two registry instances at once (a client spreading its
 * requests, as the discovery quota test does): each creates the account if it is not there, and
 * neither may fail for the other having done it meanwhile. The account row has two unique
 * columns (`id`, `principal`): an insert that ignored a conflict on one only lost the race on the
 * other as an `internal` error.
 */
describe('accounts: the first actions of a new key on two instances at once', () => {
  let h: RegistryHarness;

  beforeAll(async () => {
    h = await RegistryHarness.start({ projector: false });
  });
  afterAll(async () => {
    await h?.stop();
  });

  it('every first action succeeds, and each key has one account', async () => {
    const second = await h.addRegistry();
    const keys = 40;
    const failures: string[] = [];
    const principals: string[] = [];
    for (let round = 0; round < keys; round += 8) {
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          const one = h.api();
          const two = new ApiClient(second.url, one.key);
          principals.push(one.principal);
          const sent = await Promise.allSettled([
            one.act('CreateAgent', { name: 'first' }),
            two.act('CreateAgent', { name: 'second' }),
          ]);
          for (const s of sent)
            if (s.status === 'rejected') {
              const e = s.reason as Error & { code?: string };
              failures.push(`${e.code ?? ''} ${e.message}`);
            }
        }),
      );
    }
    expect(failures).toEqual([]);
    const rows = await h.sql
      .selectFrom('registry.accounts')
      .select(({ fn }) => ['principal', fn.countAll<string>().as('n')])
      .where('principal', 'in', principals)
      .groupBy('principal')
      .execute();
    expect(rows).toHaveLength(keys);
    expect(rows.every((r) => Number(r.n) === 1)).toBe(true);
  });

  it('the account insert raced on many connections at once: no unique violation, one row per key', async () => {
    // Each principal's inserts land together on separate connections, so some meet inside the
    // window between the conflict check and the index entries (where `ON CONFLICT (id)` let the
    // principal's index raise).
    const db = createDb(h.db.url, { max: 12 });
    const repo = new AccountsRepository(db);
    const errors: string[] = [];
    try {
      const run = `race-${Date.now().toString(36)}`;
      for (let round = 0; round < 150; round++) {
        const principal = `${run}-${round}`;
        const sent = await Promise.allSettled(Array.from({ length: 12 }, () => repo.ensure(principal)));
        for (const s of sent) if (s.status === 'rejected') errors.push(String((s.reason as Error).message));
      }
      expect(errors.slice(0, 3), `${errors.length} inserts failed`).toEqual([]);
      const n = await db
        .selectFrom('registry.accounts')
        .select(({ fn }) => fn.countAll<string>().as('n'))
        .where('principal', 'like', `${run}-%`)
        .executeTakeFirstOrThrow();
      expect(Number(n.n)).toBe(150);
    } finally {
      await db.destroy();
    }
  });
});
