/**
 * An action whose change lives outside the registry's Postgres (here a lambda tool, held by the
 * projector) writes its audit entry first, in a transaction that stays open until that store
 * answers: it holds one of the registry's 10 pool connections meanwhile. The attack: one account
 * sends a dozen such changes while the projector does not answer it (stalled, up to its 10 s).
 * Before, they took every connection of the pool, and every other account's actions waited behind
 * them; then they took every held slot, and another account's own held change (its lambda tool, an
 * approval's decision, an answer, a cancel) was refused. Now at most `REGISTRY_HELD_ENTRIES` wait
 * at once and one account holds at most half of them; the rest are refused `unavailable`
 * (retryable, nothing written) after a short wait, and the other account's actions, its held
 * change included, are answered while the flood's still wait.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serve } from '@mcpx/bus';
import { decodeSetLambdaToolRequest, WireError, type SetLambdaToolRequest } from '@mcpx/contracts';
import { createDb } from '@mcpx/db';
import { RegistryHarness } from '../support/registry-harness.js';
import { eventually } from '../support/system.js';

const SLOTS = 2;
/** One account's share of the slots: half of them, at least one. */
const SHARE = 1;
const SENT = 12;

describe('changes held open on a stalled store cannot take the registry pool from other accounts', () => {
  let h: RegistryHarness;
  /** The flooding account: the stand-in projector never answers its saves. */
  let flooder = '';
  /** Lambda saves of the flooder that reached the projector's subject (nobody answers them). */
  const stalled: SetLambdaToolRequest[] = [];
  /** Saves of other accounts, answered at once. */
  const answered: SetLambdaToolRequest[] = [];

  beforeAll(async () => {
    h = await RegistryHarness.start({
      projector: false,
      env: { REGISTRY_HELD_ENTRIES: String(SLOTS), RATE_ACTIONS_PER_SIGNER: '1000', RATE_ACTIONS_PER_ADDRESS: '1000' },
    });
    // The projector's lambda service, as it answers, but stalled for the flooding account.
    serve(
      h.nc,
      h.subjects.projectorLambdaSet,
      'held-entries-test',
      {
        decode: decodeSetLambdaToolRequest,
        handle: (req) => {
          if (req.account === flooder) {
            stalled.push(req);
            return new Promise(() => {});
          }
          answered.push(req);
          return Promise.resolve({ name: req.name, version: 1 });
        },
      },
      { error: () => {} },
    );
    await h.nc.flush();
  }, 60_000);
  afterAll(async () => {
    await h?.stop();
  });

  it("a dozen lambda saves on a stalled projector: the account's share waits, the rest are refused; another account's actions, its own held save included, are answered meanwhile", async () => {
    const attacker = h.api();
    flooder = attacker.principal;
    const { agent } = await attacker.act<{ agent: { id: string } }>('CreateAgent', {
      name: 'flood',
      definition: { mcpServers: [] },
    });
    const settled: string[] = [];
    const saves = Array.from({ length: SENT }, (_, i) =>
      attacker
        .act('SetLambdaTool', {
          agent: agent.id,
          name: `held_${i}`,
          document: { description: 'Held.', inputSchema: { type: 'object' } },
        })
        .then(
          (ok: unknown) => ok,
          (err: unknown) => err,
        )
        .finally(() => settled.push('lambda')),
    );
    await eventually(
      async () => (stalled.length >= SHARE ? true : undefined),
      10_000,
      'the held saves at the projector',
    );

    // Another account: an action that needs the pool, and a held change of its own (a lambda tool
    // save, which takes one of the slots the flood left): both answered while the flood still waits.
    const other = h.api();
    const { agent: bystander } = await other.act<{ agent: { id: string } }>('CreateAgent', {
      name: 'bystander',
      definition: { mcpServers: [] },
    });
    settled.push('other');
    const own = await other.act<{ name: string; version: number; cid: string }>('SetLambdaTool', {
      agent: bystander.id,
      name: 'its_own',
      document: { description: 'Its own.', inputSchema: { type: 'object' } },
    });
    settled.push('other held');
    expect(own).toMatchObject({ name: 'its_own', version: 1 });
    expect(answered.map((r) => r.account)).toEqual([other.principal]);

    const outcomes = await Promise.all(saves);
    expect(settled.slice(0, 2)).toEqual(['other', 'other held']);
    // Only the account's share ever reached the projector.
    expect(stalled).toHaveLength(SHARE);
    const refused = outcomes.filter(
      (o) => o instanceof WireError && o.code === 'unavailable' && o.details?.bound === 'held_entries',
    );
    expect(refused).toHaveLength(SENT - SHARE);
    for (const r of refused) {
      expect((r as WireError).message).toContain('nothing was written');
      expect((r as WireError).details).toMatchObject({ retryAfterMs: 1_000, scope: 'account', limit: SHARE });
    }
    // The held ones failed on the projector's silence: every entry of the flood rolled back; the
    // other account's save is recorded.
    expect(outcomes.filter((o) => !(o instanceof WireError))).toEqual([]);
    const reads = createDb(h.db.url, { max: 1 });
    try {
      const entries = await sql<{ account: string }>`
        SELECT account_id AS account FROM registry.audit_events WHERE action = 'SetLambdaTool'`.execute(reads);
      expect(entries.rows.map((r) => r.account)).toEqual([other.principal]);
    } finally {
      await reads.destroy();
    }
  }, 60_000);
});
