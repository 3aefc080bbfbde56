import type { Kysely } from 'kysely';
import type { Database } from '@mcpx/db';
import { documentCid, type McpToolDocument } from '@mcpx/domain';
import { ToolDocumentColumn } from '@mcpx/stored';

/** One row of `projector.tool_documents`: a server's tool document, stored once per server. */
export interface DocumentRow {
  account_id: string;
  server: string;
  server_id: string;
  name: string;
  kind: McpToolDocument['kind'];
  cid: string;
  doc_cbor: Uint8Array;
  remote_name: string;
  description: string;
}

/** A server's documents as rows, and its tool map (projected name → CID). */
export function documentRows(
  account: string,
  server: string,
  serverId: string,
  docs: readonly McpToolDocument[],
): { rows: DocumentRow[]; next: Record<string, string> } {
  const next: Record<string, string> = {};
  const rows = docs.map((doc) => {
    const cid = documentCid(doc);
    next[doc.name] = cid;
    return {
      account_id: account,
      server,
      server_id: serverId,
      name: doc.name,
      kind: doc.kind,
      cid,
      doc_cbor: ToolDocumentColumn.encode(doc),
      remote_name: doc.remoteName,
      description: doc.description,
    };
  });
  return { rows, next };
}

/** Deletes the server's `removed` documents and writes `upserts` (new or changed ones), in the caller's transaction. */
export async function writeDocuments(
  trx: Kysely<Database>,
  account: string,
  server: string,
  upserts: readonly DocumentRow[],
  removed: readonly string[],
): Promise<void> {
  if (removed.length > 0) {
    await trx
      .deleteFrom('projector.tool_documents')
      .where('account_id', '=', account)
      .where('server', '=', server)
      .where('name', 'in', removed)
      .execute();
  }
  if (upserts.length === 0) return;
  await trx
    .insertInto('projector.tool_documents')
    .values(upserts)
    .onConflict((oc) =>
      oc.columns(['account_id', 'server', 'name']).doUpdateSet((eb) => ({
        cid: eb.ref('excluded.cid'),
        doc_cbor: eb.ref('excluded.doc_cbor'),
        server_id: eb.ref('excluded.server_id'),
        kind: eb.ref('excluded.kind'),
        remote_name: eb.ref('excluded.remote_name'),
        description: eb.ref('excluded.description'),
      })),
    )
    .execute();
}
