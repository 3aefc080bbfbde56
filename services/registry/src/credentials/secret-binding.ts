import type { Redis } from 'ioredis';
import { sql } from 'kysely';
import type { Db } from '@mcpx/db';
import { secretAad, type SecretBox } from '@mcpx/secrets';
import type { McpServersRepository } from '../catalog/mcp-servers.repository.js';
import { bindToOrigin, unbind, urlOrigin } from './secret-origin.js';

export interface BindingReport {
  /** Secrets sealed before origins were recorded that this run bound to their server's origin. */
  bound: number;
  /**
   * Unbound secrets left: no server of the account names them (nothing would send them), or
   * servers of different origins do. They are never sent (an unbound secret opens for nobody).
   */
  left: number;
}

interface SecretRow {
  account_id: string;
  name: string;
  key_id: string;
  ciphertext: Uint8Array;
}

/**
 * Binds every account secret sealed before origins were recorded to the origin of the server that
 * names it (`config.secretRefs`), re-sealed under the newest key; from then on it opens only for
 * that origin, and an unbound one for none. Walks `registry.secrets` `batch` rows at a time; each
 * value is replaced only if its key id and sealed bytes are still those read (compare and set),
 * so a value re-entered meanwhile is left as it is. Idempotent; safe while the services run.
 * Throws when a value does not open (its key left the ring), naming the row, never the value.
 */
export async function bindUnboundSecrets(
  db: Db,
  box: SecretBox,
  servers: Pick<McpServersRepository, 'list'>,
  opts: { batch?: number } = {},
): Promise<BindingReport> {
  const batch = opts.batch ?? 500;
  const report: BindingReport = { bound: 0, left: 0 };
  // secret name → the origins of the servers that name it, per account (read once per account).
  const origins = new Map<string, Map<string, Set<string>>>();
  const originsOf = async (account: string, name: string): Promise<Set<string>> => {
    let byName = origins.get(account);
    if (byName === undefined) {
      byName = new Map();
      for (const s of await servers.list(account)) {
        for (const ref of Object.values(s.config.secretRefs ?? {})) {
          const set = byName.get(ref) ?? new Set<string>();
          set.add(urlOrigin(s.config.url));
          byName.set(ref, set);
        }
      }
      origins.clear(); // one account at a time: the walk is ordered by account
      origins.set(account, byName);
    }
    return byName.get(name) ?? new Set();
  };
  let after: SecretRow | undefined;
  for (;;) {
    const page = await sql<SecretRow>`
      SELECT account_id, name, key_id, ciphertext FROM registry.secrets
      ${after === undefined ? sql`` : sql`WHERE (account_id, name) > (${after.account_id}, ${after.name})`}
      ORDER BY account_id, name
      LIMIT ${batch}`.execute(db);
    for (const row of page.rows) {
      const aad = secretAad(row.account_id, row.name);
      let plaintext: string;
      try {
        plaintext = box.open({ keyId: row.key_id, ciphertext: row.ciphertext }, aad);
      } catch (err) {
        throw new Error(`registry.secrets of account ${row.account_id}, name ${row.name}: ${(err as Error).message}`, {
          cause: err,
        });
      }
      const opened = unbind(plaintext);
      if (opened.origin !== undefined) continue;
      const named = [...(await originsOf(row.account_id, row.name))];
      const origin = named.length === 1 ? named[0] : undefined;
      if (origin === undefined || origin === '') {
        report.left++;
        continue;
      }
      const next = box.seal(bindToOrigin(opened.value, origin), aad);
      const res = await sql`
        UPDATE registry.secrets SET key_id = ${next.keyId}, ciphertext = ${next.ciphertext}
        WHERE account_id = ${row.account_id} AND name = ${row.name} AND key_id = ${row.key_id} AND ciphertext = ${row.ciphertext}`.execute(
        db,
      );
      if (Number(res.numAffectedRows ?? 0) === 1) report.bound++;
    }
    after = page.rows.at(-1);
    if (after === undefined || page.rows.length < batch) return report;
  }
}

/** The Redis key that says the binding pass ran to its end for this deployment. */
const BINDING_DONE_KEY = 'secrets-origin-binding:v1';
/** Kept this long: a pass is idempotent, so one more after a month costs one walk of the table. */
const BINDING_DONE_TTL_MS = 30 * 24 * 60 * 60_000;

/**
 * {@link bindUnboundSecrets} once per deployment, at the registry's start: skipped once a run
 * has finished (a Redis key records it for 30 days; a flushed Redis only means one more
 * idempotent pass).
 * A failure is logged and the registry starts all the same (an unbound secret is sent nowhere).
 */
export async function bindUnboundSecretsOnce(
  deps: { db: Db; box: SecretBox; servers: Pick<McpServersRepository, 'list'>; redis: Redis; prefix: string },
  log: {
    info(msg: string, fields?: Record<string, unknown>): void;
    warn(msg: string, fields?: Record<string, unknown>): void;
  },
): Promise<BindingReport | undefined> {
  const key = `${deps.prefix}${BINDING_DONE_KEY}`;
  try {
    if ((await deps.redis.get(key)) !== null) return undefined;
    const report = await bindUnboundSecrets(deps.db, deps.box, deps.servers);
    await deps.redis.set(key, new Date().toISOString(), 'PX', BINDING_DONE_TTL_MS);
    if (report.bound > 0 || report.left > 0)
      log.info('secrets sealed before origins were recorded: bound to their server origin', { ...report });
    return report;
  } catch (err) {
    log.warn('secrets sealed before origins were recorded could not be bound now (they are sent nowhere until then)', {
      err: err as Error,
    });
    return undefined;
  }
}
