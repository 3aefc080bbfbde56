import { ErrorCodes, WireError } from '@mcpx/contracts';
import type { Db } from '@mcpx/db';
import type { Transaction } from 'kysely';
import type { Database } from '@mcpx/db';

/** How long an action waits for one of the slots before it is refused. */
const WAIT_MS = 2_000;

/**
 * The transactions an action holds open across another store's answer: a change that lives in
 * Redis (an approval's decision, a person's answer), the projector (a lambda tool) or the proxy's
 * task service (a cancel) has its audit entry written first, in a transaction that commits only
 * once that store answers, so Postgres lost at the entry changes nothing. Each such transaction
 * holds one of the pool's connections while it waits (up to the projector's 10 s): this process
 * lets at most `slots` of them wait at once, so that a slow store, or one signer sending many such
 * changes, cannot take the pool from every other account's actions. Past them an action waits up
 * to 2 s for a slot, then is refused `unavailable` (retryable, nothing written).
 */
export class HeldEntries {
  private held = 0;
  private readonly queue: Array<() => void> = [];

  constructor(readonly slots: number) {
    if (!Number.isInteger(slots) || slots < 1) throw new Error('HeldEntries: slots must be a positive integer');
  }

  /** Runs `work` in a transaction of `db` once a slot is free; the transaction commits when `work` resolves. */
  async transaction<T>(db: Db, work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
    await this.acquire();
    try {
      return await db.transaction().execute(work);
    } finally {
      this.release();
    }
  }

  /** Transactions waiting on another store now (for tests and the status). */
  get inUse(): number {
    return this.held;
  }

  private async acquire(): Promise<void> {
    if (this.held < this.slots) {
      this.held++;
      return;
    }
    await new Promise<void>((resolve, reject) => {
      const take = (): void => {
        clearTimeout(timer);
        this.held++;
        resolve();
      };
      const timer = setTimeout(() => {
        const i = this.queue.indexOf(take);
        if (i >= 0) this.queue.splice(i, 1);
        reject(
          new WireError(
            ErrorCodes.unavailable,
            `${this.slots} changes are waiting on another store of the connector (Redis, the projector or the task service); nothing was written, try again in a moment`,
            { retryAfterMs: 1_000, bound: 'held_entries', limit: this.slots },
          ),
        );
      }, WAIT_MS);
      this.queue.push(take);
    });
  }

  private release(): void {
    this.held--;
    this.queue.shift()?.();
  }
}
