import { sql } from 'kysely';
import { FieldRules, type Rule } from '@mcpx/contracts';
import { Permission, type McpToolDocument } from '@mcpx/domain';
import type { EndpointReads, ProxyReads } from '../read-model.js';
import { cborShape, jsonShape } from './stored-shape.js';

const { str, anyStr, oneOf, jsonObject, checkedMap, mapOf, shape } = FieldRules;

/**
 * A projected tool document: the fields a call reads checked, the whole kept as written (its CID
 * is computed over all of it).
 */
const toolDocument: Rule<McpToolDocument> = checkedMap({
  kind: oneOf('mcp'),
  name: str,
  description: anyStr,
  inputSchema: jsonObject,
  permission: oneOf(Permission.act, Permission.always_ask),
  server: str,
  remoteName: str,
});

/** `projector.tool_documents.doc_cbor`, written by the projector's projection. */
export const ToolDocumentColumn = cborShape('projector.tool_documents.doc_cbor', toolDocument);

/** `projector.projected_servers.held`: tools held for review (contract pinning), projected name → `{remoteName, cid}`. */
export const HeldToolsColumn = jsonShape(
  'projector.projected_servers.held',
  mapOf(shape({ remoteName: str, cid: anyStr })),
);

/** The projected document of CID `cid`; null when the account has none. */
export async function readToolDocument(db: ProxyReads, account: string, cid: string): Promise<McpToolDocument | null> {
  const row = await db
    .selectFrom('projector.tool_documents')
    .select('doc_cbor')
    .where('account_id', '=', account)
    .where('cid', '=', cid)
    .executeTakeFirst();
  return row === undefined ? null : ToolDocumentColumn.decode(row.doc_cbor);
}

/** The projected documents of the CIDs `cids` the account has, by CID (the endpoint's listing of an agent's tools). */
export async function readToolDocuments(
  db: EndpointReads,
  account: string,
  cids: readonly string[],
): Promise<Map<string, McpToolDocument>> {
  if (cids.length === 0) return new Map();
  const rows = await db
    .selectFrom('projector.tool_documents')
    .select(['cid', 'doc_cbor'])
    .where('account_id', '=', account)
    .where('cid', 'in', cids)
    .execute();
  return new Map(rows.map((r) => [r.cid, ToolDocumentColumn.decode(r.doc_cbor)]));
}

/** The account's live servers that hold a tool projected as `tool` for review, with the held contract's CID. */
export async function readHeldTool(
  db: ProxyReads,
  account: string,
  tool: string,
): Promise<Array<{ server: string; cid: string }>> {
  const rows = await db
    .selectFrom('projector.projected_servers')
    .select(['server', 'held'])
    .where('account_id', '=', account)
    .where('deleted', '=', false)
    .where(sql<boolean>`held ? ${tool}`)
    .execute();
  return rows.map((r) => ({ server: r.server, cid: HeldToolsColumn.check(r.held)[tool]?.cid ?? '' }));
}
