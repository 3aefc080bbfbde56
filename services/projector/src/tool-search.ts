import { sql } from 'kysely';
import type { Subscription } from '@nats-io/transport-node';
import type { Bus } from '@mcpx/bus';
import {
  QueueGroups,
  checkSearchInput,
  decodeRequest,
  familyOf,
  type SearchInput,
  type ToolSearchFamily,
  type ToolSearchReply,
} from '@mcpx/contracts';
import { StoredShapeError, ToolDocumentColumn } from '@mcpx/stored';
import type { Db } from '@mcpx/db';
import type { McpToolDocument } from '@mcpx/domain';
import type { Logger } from '@mcpx/log';
import { optionalId, requireId } from './request-fields.js';

/**
 * The parts of a user's query, ready for Postgres: `text` for `websearch_to_tsquery('english')`
 * (quotes, `or` and `-word` keep their meaning), `prefix` for `to_tsquery('simple')` (every
 * plain word as a prefix, so partial words match), and `negated` words. Words inside tool names
 * are split the way the index splits them (`create_issue`, `get-sum`, `getUser`).
 */
export interface ParsedQuery {
  text: string;
  prefix: string;
  negated: string[];
}

const WORD_RE = /[\p{L}\p{N}]+/gu;

/** Splits a search query into its full-text parts (pure; exported for tests). */
export function parseQuery(query: string): ParsedQuery {
  const text = query
    .replace(/([\p{Ll}\p{N}])(\p{Lu})/gu, '$1 $2')
    .replace(/(?<=[\p{L}\p{N}])[-_]+(?=[\p{L}\p{N}])/gu, ' ')
    .replace(/_+/g, ' ');
  const words: string[] = [];
  const negated: string[] = [];
  for (const term of text.split(/\s+/)) {
    if (term === '' || term.toLowerCase() === 'or') continue;
    const found = term.match(WORD_RE) ?? [];
    (term.startsWith('-') ? negated : words).push(...found.map((w) => w.toLowerCase()));
  }
  return { text, prefix: words.map((w) => `${w}:*`).join(' & '), negated };
}

interface HitRow {
  server: string;
  name: string;
  description: string | null;
  cid: string;
  score: number;
}

/**
 * Ranks the account's tool documents against `query`. The index (see the projector search
 * migration) holds each tool's remote name (weight A), description (B) and server (D) under
 * `english` and `simple`; the query matches stemmed whole words or typed prefixes. A tool whose
 * name matches scores 1 more than any description-only match; `ts_rank_cd` (normalised to 0..1)
 * orders within each. A query with no words at all (`__`, `->`) falls back to ILIKE on the name.
 */
export async function searchTools(
  db: Db,
  account: string,
  input: SearchInput,
  agent?: string,
): Promise<ToolSearchReply> {
  const parsed = parseQuery(input.query);
  const neg =
    parsed.negated.length > 0 ? sql`&& !! websearch_to_tsquery('english', ${parsed.negated.join(' or ')})` : sql``;
  const built = await sql<{ q: string; n: number }>`
    WITH t AS (SELECT (websearch_to_tsquery('english', ${parsed.text}) || to_tsquery('simple', ${parsed.prefix})) ${neg} AS q)
    SELECT q::text AS q, numnode(q) AS n FROM t`.execute(db);
  const tsq = built.rows[0];
  const allowed =
    agent === undefined ? sql`` : sql`AND EXISTS (SELECT 1 FROM allowed a WHERE a.name = d.name AND a.cid = d.cid)`;
  const withAllowed =
    agent === undefined
      ? sql``
      : sql`WITH allowed AS MATERIALIZED (
          SELECT t.key AS name, t.value #>> '{}' AS cid
          FROM projector.agent_tools v CROSS JOIN LATERAL jsonb_each(v.tools) t
          WHERE v.account_id = ${account} AND v.agent_id = ${agent})`;
  const family = input.server === undefined ? sql`` : sql`AND d.server = ${input.server}`;
  let rows: HitRow[];
  if (tsq !== undefined && tsq.n > 0) {
    const q = sql`${tsq.q}::tsquery`;
    rows = (
      await sql<HitRow>`
        ${withAllowed}
        SELECT d.server, d.name, d.description, d.cid,
          round(((CASE WHEN ts_filter(d.search, '{a}') @@ ${q} THEN 1 ELSE 0 END) + ts_rank_cd(d.search, ${q}, 32))::numeric, 4)::float8 AS score
        FROM projector.tool_documents d
        WHERE d.account_id = ${account} AND d.search @@ ${q} ${family} ${allowed}
        ORDER BY score DESC, d.name
        LIMIT ${input.limit}`.execute(db)
    ).rows;
  } else {
    const pattern = `%${input.query.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    rows = (
      await sql<HitRow>`
        ${withAllowed}
        SELECT d.server, d.name, d.description, d.cid, 1::float8 AS score
        FROM projector.tool_documents d
        WHERE d.account_id = ${account} AND d.name ILIKE ${pattern} ESCAPE '\\' ${family} ${allowed}
        ORDER BY d.name
        LIMIT ${input.limit}`.execute(db)
    ).rows;
  }
  return { families: groupByFamily(rows) };
}

/** Groups ranked rows by server; families come in the order of their best tool. */
function groupByFamily(rows: readonly HitRow[]): ToolSearchFamily[] {
  const families = new Map<string, ToolSearchFamily>();
  for (const r of rows) {
    let f = families.get(r.server);
    if (f === undefined) families.set(r.server, (f = { family: familyOf(r.server), server: r.server, tools: [] }));
    f.tools.push({ name: r.name, description: r.description ?? '', score: r.score, cid: r.cid });
  }
  return [...families.values()];
}

/** Answers `projector.tools.search` (the registry's SearchTools). */
export function serveToolSearch(bus: Bus, db: Db): Subscription {
  // The request is a decoded map whose fields are unchecked: each is checked here.
  return bus.serve(
    bus.subjects.projectorToolsSearch,
    QueueGroups.projector,
    decodeRequest,
    async (req): Promise<ToolSearchReply> => {
      const account = requireId(req.account, 'account');
      const agent = optionalId(req.agent, 'agent');
      return searchTools(db, account, checkSearchInput(req), agent);
    },
  );
}

/**
 * Fills the search text of documents written before search existed (their `description` is
 * NULL) from their stored documents. Idempotent and safe with several instances; a no-op once done.
 * A document its column's codec refuses is logged (column and field, never a value) and left
 * unfilled: one bad row does not stop the projector from starting.
 */
export async function backfillSearchText(db: Db, log: Logger, batch = 500): Promise<number> {
  let filled = 0;
  let after: { account_id: string; server: string; name: string } | undefined;
  for (;;) {
    let q = db
      .selectFrom('projector.tool_documents')
      .select(['account_id', 'server', 'name', 'cid', 'doc_cbor'])
      .where('description', 'is', null);
    if (after !== undefined) {
      const a = after;
      q = q.where((eb) =>
        eb(eb.refTuple('account_id', 'server', 'name'), '>', eb.tuple(a.account_id, a.server, a.name)),
      );
    }
    const rows = await q.orderBy('account_id').orderBy('server').orderBy('name').limit(batch).execute();
    for (const r of rows) {
      let doc: McpToolDocument;
      try {
        doc = ToolDocumentColumn.decode(r.doc_cbor);
      } catch (err) {
        if (!(err instanceof StoredShapeError)) throw err;
        log.warn('a stored tool document does not decode; its search text is left unfilled', {
          account: r.account_id,
          server: r.server,
          cid: r.cid,
          column: err.column,
          field: err.field,
        });
        continue;
      }
      await db
        .updateTable('projector.tool_documents')
        .set({ remote_name: doc.remoteName, description: doc.description })
        .where('account_id', '=', r.account_id)
        .where('server', '=', r.server)
        .where('name', '=', r.name)
        .where('cid', '=', r.cid)
        .where('description', 'is', null)
        .execute();
    }
    filled += rows.length;
    const last = rows.at(-1);
    if (last === undefined || rows.length < batch) break;
    after = last;
  }
  if (filled > 0) log.info('search text filled for earlier tool documents', { documents: filled });
  return filled;
}
