import type { Redis } from 'ioredis';
import { createPending, type PendingCaps, type PendingRefusal } from './pending-caps.js';
import {
  consumeRecord,
  countAllPending,
  listAccountPending,
  PendingRecordKeys,
  type CallBinding,
  type WaitingRecord,
} from './pending-records.js';

/** A used, decided or expired record is kept this much longer, so a late use says why it fails. */
export const TOMBSTONE_MS = 60 * 60_000;

/** How a store of one kind of record is set up: its key names, its window, its clock, its decoding. */
export interface PendingKind<R> {
  /** `one` names a record's key, `many` the indexes and ledgers (see {@link PendingRecordKeys}). */
  names: { one: string; many: string };
  ttlMs: number;
  now?: (() => number) | undefined;
  parse: (raw: string | undefined) => R;
}

/**
 * What every store of records that wait for a person (approvals, input requests) does alike: the
 * keys, the window and the clock, recording one against the pending caps, reading one, using one
 * once for its call, counting and listing the waiting ones. Each store adds its own transitions.
 */
export abstract class PendingRecordStore<R extends WaitingRecord> {
  protected readonly keys: PendingRecordKeys;

  protected constructor(
    protected readonly redis: Redis,
    prefix: string,
    private readonly kind: PendingKind<R>,
  ) {
    this.keys = new PendingRecordKeys(prefix, kind.names.one, kind.names.many);
  }

  /** How long a record waits, and once settled, how long its call may be re-sent. */
  get ttlMs(): number {
    return this.kind.ttlMs;
  }

  protected now(): number {
    return this.kind.now?.() ?? Date.now();
  }

  protected parse(raw: string | undefined): R {
    return this.kind.parse(raw);
  }

  /** One record of the account as stored (any status), or null when unknown or forgotten. */
  async get(account: string, id: string): Promise<R | null> {
    const raw = await this.redis.get(this.keys.record(account, id));
    return raw === null ? null : this.parse(raw);
  }

  /** How many records wait for a person, across every account (pending, unexpired). */
  countPending(): Promise<number> {
    return countAllPending(this.redis, this.keys, this.now());
  }

  /** The account's pending, unexpired records, oldest first. */
  listPending(account: string): Promise<R[]> {
    return listAccountPending(this.redis, this.keys, account, this.now(), (raw) => this.parse(raw));
  }

  /**
   * Records a pending `record` of `account` and `agent`, counted against `caps` in one step:
   * the refusal (nothing recorded) when a cap is full. `allMember` names it in every account's index.
   */
  protected recordPending(
    record: R & { id: string; account: string; agent: string },
    keepMs: number,
    allMember: string,
    caps: PendingCaps,
  ): Promise<PendingRefusal | undefined> {
    return createPending(
      this.redis,
      this.keys.forCreate(record.account, record.agent, record.id),
      {
        now: record.createdAt,
        json: JSON.stringify(record),
        keepMs,
        deadline: record.expiresAt,
        id: record.id,
        allMember,
      },
      caps,
    );
  }

  /** Uses the record once for the call it was made for, by the store's consume script. */
  protected consumeOnce<Reason extends string>(script: string, account: string, id: string, binding: CallBinding) {
    return consumeRecord<R, Reason>(this.redis, script, this.keys.record(account, id), this.now(), binding);
  }
}
