import type { Counter, Meter } from '@opentelemetry/api';
import { sql, type Kysely } from 'kysely';
import { ErrorCodes, WireError } from '@mcpx/contracts';
import type { Database } from '@mcpx/db';
import { DEFAULT_QUOTAS, type QuotaSettings } from '@mcpx/config';

/** The kinds a refusal is counted by (`mcpx_quota_rejections_total{kind}`): a fixed set, never input. */
export const QuotaKinds = {
  servers: 'servers_per_account',
  agents: 'agents_per_account',
  eventStreams: 'event_streams_per_account',
  eventStreamsPerAddress: 'event_streams_per_address',
  eventStreamsPerProcess: 'event_streams_per_process',
  actionsPerSigner: 'actions_per_signer',
  actionsPerAddress: 'actions_per_address',
} as const;
export type QuotaKind = (typeof QuotaKinds)[keyof typeof QuotaKinds];

/** A `quota_exceeded` error naming the field that would have gone over, the limit and its value. */
export function quotaExceeded(
  field: string,
  kind: string,
  max: number,
  message: string,
  retryAfterMs?: number,
): WireError {
  return new WireError(ErrorCodes.quotaExceeded, `${field}: ${message}`, {
    field,
    limit: kind,
    max,
    ...(retryAfterMs !== undefined ? { retryAfterMs: Math.max(1, Math.ceil(retryAfterMs)) } : {}),
  });
}

/** A `rate_limited` error with the limit's name (and its value, for a count held) and when to try again. */
export function rateLimited(kind: string, retryAfterMs: number, message: string, max?: number): WireError {
  return new WireError(ErrorCodes.rateLimited, message, {
    limit: kind,
    ...(max !== undefined ? { max } : {}),
    retryAfterMs: Math.max(1, Math.ceil(retryAfterMs)),
  });
}

/**
 * The registry's per-account counts (servers, agents), checked inside the transaction that would
 * add one, and the one rejection counter every registry limit reports to.
 */
export class AccountQuotas {
  private readonly rejections: Counter;

  constructor(
    readonly limits: QuotaSettings = DEFAULT_QUOTAS,
    meter?: Meter,
  ) {
    this.rejections =
      meter?.createCounter('mcpx_quota_rejections_total', {
        description: 'Requests refused by a quota or rate limit, by kind',
      }) ?? NOOP_COUNTER;
  }

  /** Counts one refusal of `kind`. */
  rejected(kind: QuotaKind): void {
    this.rejections.add(1, { kind });
  }

  /**
   * Refuses a new server when the account holds its quota. Takes the account row's lock first, so
   * concurrent creations of one account are counted one after the other (none slips past the cap).
   */
  async checkNewServer(trx: Kysely<Database>, account: string): Promise<void> {
    const max = this.limits.serversPerAccount;
    if (!(max > 0)) return;
    await lockAccount(trx, account);
    const row = await trx
      .selectFrom('registry.mcp_servers')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('account_id', '=', account)
      .executeTakeFirst();
    if (Number(row?.n ?? 0) >= max) {
      this.rejected(QuotaKinds.servers);
      throw quotaExceeded(
        'name',
        QuotaKinds.servers,
        max,
        `the account holds its ${max} MCP servers; delete one to add another`,
      );
    }
  }

  /** Refuses a new agent when the account holds its quota (under the account row's lock, as above). */
  async checkNewAgent(trx: Kysely<Database>, account: string): Promise<void> {
    const max = this.limits.agentsPerAccount;
    if (!(max > 0)) return;
    await lockAccount(trx, account);
    const row = await trx
      .selectFrom('registry.agents')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('account_id', '=', account)
      .executeTakeFirst();
    if (Number(row?.n ?? 0) >= max) {
      this.rejected(QuotaKinds.agents);
      throw quotaExceeded(
        'name',
        QuotaKinds.agents,
        max,
        `the account holds its ${max} agents; delete one to add another`,
      );
    }
  }
}

async function lockAccount(trx: Kysely<Database>, account: string): Promise<void> {
  await sql`SELECT 1 FROM registry.accounts WHERE id = ${account} FOR UPDATE`.execute(trx);
}

const NOOP_COUNTER: Counter = { add: () => {} };
const DEFAULT_ACCOUNT_QUOTAS = new AccountQuotas();

/** The quotas an action checks: the wired ones, else the defaults. */
export function accountQuotas(deps: { quotas?: AccountQuotas }): AccountQuotas {
  return deps.quotas ?? DEFAULT_ACCOUNT_QUOTAS;
}
