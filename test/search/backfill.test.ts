import { sql as raw } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@mcpx/config';
import { encodePayload } from '@mcpx/contracts';
import { createDb, type Db } from '@mcpx/db';
import { buildToolDocuments, documentCid, ToolNameStyle } from '@mcpx/domain';
import { startProjector } from '@mcpx/projector';
import type { TestDatabase } from '../support/env.js';
import { systemEnv } from '../support/system.js';

/** Documents written before search existed (NULL search text) are filled when a projector starts. */
describe('search text of earlier documents', () => {
  let db: TestDatabase;
  let sql: Db;
  let env: Record<string, string>;

  beforeAll(async () => {
    ({ db, env } = await systemEnv());
    sql = createDb(db.url);
  });

  afterAll(async () => {
    await sql?.destroy();
    await db?.drop();
  });

  it('fills remote_name and description from the stored document', async () => {
    const [doc] = buildToolDocuments('legacy', [{ name: 'findInvoices', description: 'Find unpaid invoices.' }], {
      style: ToolNameStyle.double_underscore,
    });
    if (doc === undefined) throw new Error('no document');
    await sql
      .insertInto('projector.tool_documents')
      .values({
        account_id: 'acct-backfill',
        server: 'legacy',
        server_id: 's1',
        name: doc.name,
        kind: doc.kind,
        cid: documentCid(doc),
        doc_cbor: encodePayload(doc),
      })
      .execute();
    const projector = await startProjector(
      loadConfig('projector', { ...env, HTTP_PORT: '0', INSTANCE_ID: 'projector-backfill' }),
      { logSink: () => undefined },
    );
    await projector.stop();
    const row = await sql
      .selectFrom('projector.tool_documents')
      .select(['remote_name', 'description'])
      .where('account_id', '=', 'acct-backfill')
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ remote_name: 'findInvoices', description: 'Find unpaid invoices.' });
    const { rows } = await raw<{ name: string }>`
      SELECT name FROM projector.tool_documents WHERE account_id = 'acct-backfill' AND search @@ to_tsquery('simple', 'invoice:*')`.execute(
      sql,
    );
    expect(rows.map((r) => r.name)).toEqual(['legacy__findInvoices']);
  });
});
