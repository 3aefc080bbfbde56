/**
 * An action whose change lives outside the registry's Postgres (here a lambda tool, held by the
 * projector) writes its audit entry first, in a transaction that stays open until that store
 * answers: it holds one of the registry's 10 pool connections meanwhile. The attack: one account
 * sends a dozen such changes while the projector does not answer (stalled, up to its 10 s). Before,
 * they took every connection of the pool, and every other account's actions waited behind them.
 * Now at most `REGISTRY_HELD_ENTRIES` wait on the projector at once; the rest are refused
 * `unavailable` (retryable, nothing written) after a short wait, and the other account's action
 * is answered while the held ones still wait.
 */
import { sql } from 'kysely';
import type { Msg } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WireError } from '@mcpx/contracts';
import { createDb } from '@mcpx/db';
import { RegistryHarness } from '../support/registry-harness.js';
import { eventually } from '../support/system.js';

const SLOTS = 2;
const SENT = 12;

describe('changes held open on a stalled store cannot take the registry pool from other accounts', () => {
  let h: RegistryHarness;
  /** Lambda saves that reached the projector's subject (nobody answers them). */
  const stalled: Msg[] = [];

  beforeAll(async () => {
    h = await RegistryHarness.start({
      projector: false,
      env: { REGISTRY_HELD_ENTRIES: String(SLOTS), RATE_ACTIONS_PER_SIGNER: '1000', RATE_ACTIONS_PER_ADDRESS: '1000' },
    });
    h.nc.subscribe(h.subjects.projectorLambdaSet, {
      callback: (_err, msg) => {
        stalled.push(msg);
      },
    });
    await h.nc.flush();
  }, 60_000);
  afterAll(async () => {
    await h?.stop();
  });

  it("a dozen lambda saves on a stalled projector: two wait, the rest are refused, another account's action is answered meanwhile", async () => {
    const attacker = h.api();
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
      async () => (stalled.length >= SLOTS ? true : undefined),
      10_000,
      'the held saves at the projector',
    );

    // Another account, an action that needs the pool: answered while the held saves still wait.
    const other = h.api();
    await other.act('CreateAgent', { name: 'bystander', definition: { mcpServers: [] } });
    settled.push('other');

    const outcomes = await Promise.all(saves);
    expect(settled[0]).toBe('other');
    // Only the slots' worth ever reached the projector.
    expect(stalled).toHaveLength(SLOTS);
    const refused = outcomes.filter(
      (o) => o instanceof WireError && o.code === 'unavailable' && o.details?.bound === 'held_entries',
    );
    expect(refused).toHaveLength(SENT - SLOTS);
    for (const r of refused) {
      expect((r as WireError).message).toContain('nothing was written');
      expect((r as WireError).details).toMatchObject({ retryAfterMs: 1_000, limit: SLOTS });
    }
    // The held ones failed on the projector's silence: every entry rolled back, nothing recorded.
    expect(outcomes.filter((o) => !(o instanceof WireError))).toEqual([]);
    const reads = createDb(h.db.url, { max: 1 });
    try {
      const entries = await sql<{ n: string }>`
        SELECT count(*) AS n FROM registry.audit_events WHERE action = 'SetLambdaTool'`.execute(reads);
      expect(Number(entries.rows[0]?.n)).toBe(0);
    } finally {
      await reads.destroy();
    }
  }, 60_000);
});
