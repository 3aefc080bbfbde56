import type { Subscription } from '@nats-io/transport-node';
import type { Bus } from '@mcpx/bus';
import { ErrorCodes, QueueGroups, WireError, decodePayload, invalidInput, type AgentToolsReply, type AgentToolsRequest } from '@mcpx/contracts';
import type { Db } from '@mcpx/db';
import type { McpToolDocument } from '@mcpx/domain';

/** An agent's effective tool set with every document's contract (ListAgentTools asks for it). */
export async function readAgentTools(db: Db, account: string, agent: string): Promise<AgentToolsReply> {
  const row = await db.selectFrom('projector.agent_tools').selectAll().where('account_id', '=', account).where('agent_id', '=', agent).executeTakeFirst();
  if (row === undefined) return { version: 0, documents: [], conflicts: [] };
  const cids = Object.values(row.tools);
  const docs =
    cids.length === 0
      ? []
      : await db.selectFrom('projector.tool_documents').select(['cid', 'doc_cbor']).where('account_id', '=', account).where('cid', 'in', cids).execute();
  const byCid = new Map(docs.map((d) => [d.cid, d.doc_cbor]));
  const documents: AgentToolsReply['documents'] = [];
  for (const [name, cid] of Object.entries(row.tools).sort(([a], [b]) => (a < b ? -1 : 1))) {
    const bytes = byCid.get(cid);
    if (bytes === undefined) throw new WireError(ErrorCodes.internal, `document ${name} is missing`);
    documents.push({ ...decodePayload<McpToolDocument>(bytes), cid });
  }
  return { version: row.version, documents, conflicts: row.conflicts };
}

export function serveAgentTools(bus: Bus, db: Db): Subscription {
  return bus.serve<AgentToolsRequest, AgentToolsReply>(bus.subjects.projectorAgentTools, QueueGroups.projector, async (req) => {
    if (typeof req?.account !== 'string' || req.account === '') throw invalidInput('account', 'is required');
    if (typeof req.agent !== 'string' || req.agent === '') throw invalidInput('agent', 'is required');
    return readAgentTools(db, req.account, req.agent);
  });
}
