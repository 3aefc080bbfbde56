import { sql, type Kysely } from 'kysely';
import { invalidInput, type AuditEventView } from '@mcpx/contracts';
import type { Database } from '@mcpx/db';

/**
 * What the audit log records: every change to servers, agents, grants, permission levels, pins
 * and reviews, approvals and input answers, signers, agent tokens (by id, never the token), lambda tools, vendor connections and OAuth authorizations asked for. `action` names the change (the action type, or what a
 * discovery did on its own); `target` what it changed.
 */
export interface AuditEntry {
  account: string;
  /** The signer's principal, or `registry` for what the registry did on its own (a discovery that held a change). */
  signer: string;
  /** The signer's role (`OWNER`, `WRITER`, `AGENT`), or `system`. */
  role: string;
  action: string;
  target: {
    kind: 'server' | 'agent' | 'tool' | 'approval' | 'input' | 'signer' | 'account' | 'vendor' | 'token' | 'task';
    name: string;
  };
  /** The state before and after, as plain JSON: never a secret (redacted views only; see {@link auditView}). */
  before?: unknown;
  after?: unknown;
}

/** The signer of changes the registry makes on its own. */
export const SYSTEM_SIGNER = { signer: 'registry', role: 'system' } as const;

/** Who an action's entry names: the calling signer, its account and its role. */
export function auditBy(caller: {
  account: string;
  signer: string;
  role: string;
}): Pick<AuditEntry, 'account' | 'signer' | 'role'> {
  return { account: caller.account, signer: caller.signer, role: caller.role };
}

/** Bytes of JSON kept of one `before` or `after` (a bigger one is replaced by a marker). */
const VIEW_MAX_BYTES = 64 * 1024;

function json(value: unknown): string | null {
  if (value === undefined) return null;
  const text = JSON.stringify(value);
  if (text === undefined) return null;
  return Buffer.byteLength(text, 'utf8') > VIEW_MAX_BYTES
    ? JSON.stringify({ truncated: true, bytes: Buffer.byteLength(text, 'utf8') })
    : text;
}

/**
 * Appends an entry, in `trx` when given so the entry commits (or rolls back) with the change it
 * describes. The log is append-only: the database refuses updates and deletes (but the retention job's).
 */
export async function recordAudit(db: Kysely<Database>, entry: AuditEntry): Promise<void> {
  await db
    .insertInto('registry.audit_events')
    .values({
      account_id: entry.account,
      signer: entry.signer,
      role: entry.role,
      action: entry.action,
      target_kind: entry.target.kind,
      target: entry.target.name,
      before: json(entry.before),
      after: json(entry.after),
    })
    .execute();
}

/** Keys whose values are never recorded, wherever they appear (defence in depth under the redacted views). */
const SECRET_KEYS =
  /^(token|accessToken|access_token|refreshToken|refresh_token|clientSecret|client_secret|privateKey|secretHeaders|secret|password|authorization|arguments|requestState|answer|answers|content)$/i;

/**
 * A value as the audit log may keep it: plain JSON, and every field named like a secret
 * (`token`, `secretHeaders`, `clientSecret`, `privateKey`, `authorization`, call `arguments`,
 * input `answers`, …) replaced by `"[redacted]"`.
 */
export function auditView(value: unknown, depth = 0): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (depth > 12) return '[deep]';
  if (Array.isArray(value)) return value.slice(0, 500).map((v) => auditView(v, depth + 1));
  if (value instanceof Date) return value.toISOString();
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (v === undefined) continue;
    out[k] = SECRET_KEYS.test(k) ? '[redacted]' : auditView(v, depth + 1);
  }
  return out;
}

export interface AuditQuery {
  limit: number;
  /** Entries older than this id (the previous page's `nextCursor`). */
  cursor?: number;
  action?: string;
  targetKind?: string;
  target?: string;
  signer?: string;
  since?: Date;
  until?: Date;
}

export const AUDIT_PAGE = { defaultLimit: 50, maxLimit: 200 } as const;

/** Parses ListAuditEvents' filters: every error names its field. */
export function parseAuditQuery(action: Record<string, unknown>): AuditQuery {
  const q: AuditQuery = { limit: AUDIT_PAGE.defaultLimit };
  if (action.limit !== undefined) {
    if (
      typeof action.limit !== 'number' ||
      !Number.isInteger(action.limit) ||
      action.limit < 1 ||
      action.limit > AUDIT_PAGE.maxLimit
    )
      throw invalidInput('limit', `must be an integer from 1 to ${AUDIT_PAGE.maxLimit}`);
    q.limit = action.limit;
  }
  if (action.cursor !== undefined) {
    if (typeof action.cursor !== 'string' || !/^[1-9][0-9]{0,17}$/.test(action.cursor))
      throw invalidInput('cursor', 'must be a cursor from a previous page');
    q.cursor = Number(action.cursor);
  }
  for (const key of ['action', 'targetKind', 'target', 'signer'] as const) {
    const v = action[key];
    if (v === undefined) continue;
    if (typeof v !== 'string' || v === '' || v.length > 256)
      throw invalidInput(key, 'must be a non-empty string of at most 256 characters');
    q[key] = v;
  }
  for (const key of ['since', 'until'] as const) {
    const v = action[key];
    if (v === undefined) continue;
    const at = typeof v === 'string' ? new Date(v) : undefined;
    if (at === undefined || Number.isNaN(at.getTime())) throw invalidInput(key, 'must be an ISO-8601 time');
    q[key] = at;
  }
  return q;
}

/** A page of the account's log, newest first, and the cursor of the next page. */
export async function listAuditEvents(
  db: Kysely<Database>,
  account: string,
  q: AuditQuery,
): Promise<{ events: AuditEventView[]; nextCursor?: string }> {
  let query = db.selectFrom('registry.audit_events').selectAll().where('account_id', '=', account);
  if (q.cursor !== undefined) query = query.where('id', '<', q.cursor);
  if (q.action !== undefined) query = query.where('action', '=', q.action);
  if (q.targetKind !== undefined) query = query.where('target_kind', '=', q.targetKind);
  if (q.target !== undefined) query = query.where('target', '=', q.target);
  if (q.signer !== undefined) query = query.where('signer', '=', q.signer);
  if (q.since !== undefined) query = query.where('at', '>=', q.since);
  if (q.until !== undefined) query = query.where('at', '<', q.until);
  const rows = await query
    .orderBy('id', 'desc')
    .limit(q.limit + 1)
    .execute();
  const page = rows.slice(0, q.limit);
  const events = page.map((r) => ({
    id: String(r.id),
    at: r.at.toISOString(),
    signer: r.signer,
    role: r.role,
    action: r.action,
    target: { kind: r.target_kind, name: r.target },
    ...(r.before !== null ? { before: r.before } : {}),
    ...(r.after !== null ? { after: r.after } : {}),
  }));
  const last = page.at(-1);
  return rows.length > q.limit && last !== undefined ? { events, nextCursor: String(last.id) } : { events };
}

/**
 * The retention job: deletes entries older than `retentionDays` (0 keeps everything), in batches,
 * as the only writer the append-only trigger lets delete. Returns how many went.
 */
export async function pruneAuditEvents(db: Kysely<Database>, retentionDays: number, batch = 10_000): Promise<number> {
  if (!(retentionDays > 0)) return 0;
  const before = new Date(Date.now() - retentionDays * 86_400_000);
  let total = 0;
  for (;;) {
    const n = await db.transaction().execute(async (trx) => {
      await sql`SET LOCAL mcpx.audit_retention = 'on'`.execute(trx);
      const r =
        await sql`DELETE FROM registry.audit_events WHERE id IN (SELECT id FROM registry.audit_events WHERE at < ${before} ORDER BY id LIMIT ${batch})`.execute(
          trx,
        );
      return Number(r.numAffectedRows ?? 0);
    });
    total += n;
    if (n < batch) return total;
  }
}

/**
 * Runs {@link pruneAuditEvents} now and then (hourly, jittered): every instance may, the DELETE is
 * the same whoever runs it. A failure is logged and tried again at the next turn.
 */
export function startAuditRetention(
  db: Kysely<Database>,
  retentionDays: number,
  log: {
    warn(msg: string, fields?: Record<string, unknown>): void;
    info(msg: string, fields?: Record<string, unknown>): void;
  },
  everyMs = 3_600_000,
): { stop(): void } {
  if (!(retentionDays > 0)) return { stop: () => undefined };
  const run = (): void => {
    pruneAuditEvents(db, retentionDays).then(
      (n) => {
        if (n > 0) log.info('audit entries past their retention deleted', { count: n, retentionDays });
      },
      (err: unknown) => log.warn('audit retention failed', { err: err as Error }),
    );
  };
  const first = setTimeout(run, 30_000 + Math.random() * 30_000);
  const timer = setInterval(run, everyMs);
  first.unref();
  timer.unref();
  return {
    stop: () => {
      clearTimeout(first);
      clearInterval(timer);
    },
  };
}
