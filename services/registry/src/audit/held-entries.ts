import { ErrorCodes, WireError } from '@mcpx/contracts';
import type { Db } from '@mcpx/db';
import type { Transaction } from 'kysely';
import type { Database } from '@mcpx/db';

/** How long an action waits for one of the slots before it is refused. */
const WAIT_MS = 2_000;

/** One action in line for a slot: its account, and what hands it the slot. */
interface Waiter {
  account: string;
  take: () => void;
}

/**
 * The transactions an action holds open across another store's answer: a change that lives in
 * Redis (an approval's decision, a person's answer), the projector (a lambda tool) or the proxy's
 * task service (a cancel) has its audit entry written first, in a transaction that commits only
 * once that store answers, so Postgres lost at the entry changes nothing. Each such transaction
 * holds one of the pool's connections while it waits (up to the projector's 10 s): this process
 * lets at most `slots` of them wait at once, so that a slow store, or one signer sending many such
 * changes, cannot take the pool from every other account's actions.
 *
 * One account holds at most `perAccount` of the slots (half of them, at least one): an account
 * that sends many such changes to a store that does not answer cannot take the slots from another
 * account's approval, answer or cancel either. Past its share, or past the slots, an action waits
 * up to 2 s for a slot it may take (the line is first come, first served among those that may),
 * then is refused `unavailable` (retryable, nothing written).
 */
export class HeldEntries {
  private held = 0;
  private readonly byAccount = new Map<string, number>();
  private readonly queue: Waiter[] = [];
  readonly perAccount: number;

  constructor(readonly slots: number) {
    if (!Number.isInteger(slots) || slots < 1) throw new Error('HeldEntries: slots must be a positive integer');
    this.perAccount = Math.max(1, Math.ceil(slots / 2));
  }

  /** Runs `work` for `account` in a transaction of `db` once a slot is free; the transaction commits when `work` resolves. */
  async transaction<T>(db: Db, account: string, work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
    await this.acquire(account);
    try {
      return await db.transaction().execute(work);
    } finally {
      this.release(account);
    }
  }

  /** Transactions waiting on another store now (for tests and the status). */
  get inUse(): number {
    return this.held;
  }

  private mayTake(account: string): boolean {
    return this.held < this.slots && (this.byAccount.get(account) ?? 0) < this.perAccount;
  }

  private take(account: string): void {
    this.held++;
    this.byAccount.set(account, (this.byAccount.get(account) ?? 0) + 1);
  }

  private async acquire(account: string): Promise<void> {
    if (this.mayTake(account)) {
      this.take(account);
      return;
    }
    await new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        account,
        take: () => {
          clearTimeout(timer);
          this.take(account);
          resolve();
        },
      };
      const timer = setTimeout(() => {
        const i = this.queue.indexOf(waiter);
        if (i >= 0) this.queue.splice(i, 1);
        reject(this.refusal(account));
      }, WAIT_MS);
      this.queue.push(waiter);
    });
  }

  /** Why an action that waited its 2 s got no slot: its account's share, or every slot, still taken. */
  private refusal(account: string): WireError {
    const own = this.byAccount.get(account) ?? 0;
    if (own >= this.perAccount)
      return new WireError(
        ErrorCodes.unavailable,
        `this account has ${own} changes waiting on another store of the connector (Redis, the projector or the task service), its share; nothing was written, try again in a moment`,
        { retryAfterMs: 1_000, bound: 'held_entries', scope: 'account', limit: this.perAccount },
      );
    return new WireError(
      ErrorCodes.unavailable,
      `${this.slots} changes are waiting on another store of the connector (Redis, the projector or the task service); nothing was written, try again in a moment`,
      { retryAfterMs: 1_000, bound: 'held_entries', limit: this.slots },
    );
  }

  private release(account: string): void {
    this.held--;
    const own = (this.byAccount.get(account) ?? 1) - 1;
    if (own <= 0) this.byAccount.delete(account);
    else this.byAccount.set(account, own);
    // The first in line that may take a slot now: another account's, when this one's share is taken.
    const i = this.queue.findIndex((w) => this.mayTake(w.account));
    if (i >= 0) this.queue.splice(i, 1)[0]!.take();
  }
}
