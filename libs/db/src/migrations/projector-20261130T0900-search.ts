import { sql, type Kysely } from 'kysely';

/**
 * Tool search (SearchTools): each tool document gets its remote name and description as text
 * (doc_cbor is opaque to Postgres) and a generated `search` tsvector over them, with a GIN index.
 *
 * - Weight A: the remote tool name, split into words at `_`, `-`, any other non-alphanumeric
 *   character and camelCase boundaries (`create_issue`, `get-sum`, `getUserDetails`).
 * - Weight B: the description.
 * - Weight D: the server name (its family, `mcp:<server>`), so a query naming the server still
 *   finds its tools, below any tool whose own name or description matches.
 *
 * Name and description are indexed twice, under `english` (stems: "issues" finds `create_issue`,
 * "listing" finds "Lists") and under `simple` (the words as written, so a typed prefix such as
 * "crea" or "repositor" matches whatever the stemmer made of the word). The server is `simple` only.
 *
 * Rows written before this migration have NULL text columns; the projector fills them from
 * doc_cbor when it starts (see services/projector/src/tool-search.ts).
 */
export async function up(db: Kysely<any>): Promise<void> {
  // A name's words: camelCase boundaries and every run of non-alphanumerics become spaces.
  await sql`
    CREATE FUNCTION projector.search_words(value text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN regexp_replace(regexp_replace(value, '([[:lower:][:digit:]])([[:upper:]])', '\\1 \\2', 'g'), '[^[:alnum:]]+', ' ', 'g')`.execute(
    db,
  );
  await sql`ALTER TABLE projector.tool_documents ADD COLUMN remote_name text, ADD COLUMN description text`.execute(db);
  await sql`
    ALTER TABLE projector.tool_documents ADD COLUMN search tsvector GENERATED ALWAYS AS (
      setweight(to_tsvector('english'::regconfig, projector.search_words(coalesce(remote_name, name))), 'A') ||
      setweight(to_tsvector('simple'::regconfig, projector.search_words(coalesce(remote_name, name))), 'A') ||
      setweight(to_tsvector('english'::regconfig, coalesce(description, '')), 'B') ||
      setweight(to_tsvector('simple'::regconfig, coalesce(description, '')), 'B') ||
      setweight(to_tsvector('simple'::regconfig, projector.search_words(server)), 'D')
    ) STORED`.execute(db);
  await sql`CREATE INDEX tool_documents_search ON projector.tool_documents USING gin (search)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP INDEX IF EXISTS projector.tool_documents_search`.execute(db);
  await sql`ALTER TABLE projector.tool_documents DROP COLUMN IF EXISTS search, DROP COLUMN IF EXISTS remote_name, DROP COLUMN IF EXISTS description`.execute(
    db,
  );
  await sql`DROP FUNCTION IF EXISTS projector.search_words(text)`.execute(db);
}
