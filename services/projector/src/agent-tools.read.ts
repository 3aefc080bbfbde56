import type { Subscription } from '@nats-io/transport-node';
import type { Bus } from '@mcpx/bus';
import { ErrorCodes, QueueGroups, WireError, decodeAgentToolsRequest, type AgentToolsReply } from '@mcpx/contracts';
import { ToolDocumentColumn } from '@mcpx/stored';
import type { Db } from '@mcpx/db';
import {
  promotableTools,
  providerTools,
  renderToolIndex,
  renderToolListing,
  type AgentToolDocument,
  type ToolNameStyle,
} from '@mcpx/domain';
import { effectiveSet, heldConflicts, mcpEntries } from './agent-sets.js';
import { LambdaToolColumn } from './lambda-tools.column.js';
import { nameList, requireId } from './request-fields.js';

/** At most this many names may be asked to be promoted at once. */
const MAX_REQUESTED = 256;

/** The rows readAgentTools reads, all in the caller's transaction. */
async function readSnapshot(db: Db, account: string, agent: string) {
  const row = await db
    .selectFrom('projector.agent_sets')
    .select(['servers', 'version'])
    .where('account_id', '=', account)
    .where('agent_id', '=', agent)
    .executeTakeFirst();
  const [entries, lambdaRows, held] = await Promise.all([
    mcpEntries(db, account, row?.servers ?? []),
    db
      .selectFrom('projector.lambda_tools')
      .select(['name', 'cid', 'doc_cbor'])
      .where('account_id', '=', account)
      .where('agent_id', '=', agent)
      .orderBy('name')
      .execute(),
    heldConflicts(db, account, row?.servers ?? []),
  ]);
  const lambdas = lambdaRows.map((l) => ({ ...LambdaToolColumn.decode(l.doc_cbor), cid: l.cid }));
  const set = effectiveSet(entries, new Map(lambdas.map((l) => [l.name, l.cid])));
  // The mcp tools the set kept (a lambda document never has an mcp document's CID).
  const mcp = entries.filter((e) => set.tools[e.name] === e.cid).sort((a, b) => (a.name < b.name ? -1 : 1));
  const docs =
    mcp.length === 0
      ? []
      : await db
          .selectFrom('projector.tool_documents')
          .select(['cid', 'doc_cbor'])
          .where('account_id', '=', account)
          .where(
            'cid',
            'in',
            mcp.map((e) => e.cid),
          )
          .execute();
  return {
    row,
    lambdas,
    conflicts: [...set.conflicts, ...held].sort((a, b) =>
      a.name < b.name ? -1 : a.name > b.name ? 1 : a.server < b.server ? -1 : a.server > b.server ? 1 : 0,
    ),
    mcp,
    docs,
  };
}

/**
 * An agent's effective tool set with every document's contract, its index and listing, the
 * provider formats of its enabled documents and, when `requested` is given, the promotion rule
 * applied to those names (ListAgentTools and PromoteTools ask for it).
 */
export async function readAgentTools(
  db: Db,
  style: ToolNameStyle,
  account: string,
  agent: string,
  requested?: readonly string[],
): Promise<AgentToolsReply> {
  // One snapshot for the set, its entries and their documents: a projection committed between two
  // separate reads would leave an entry naming a CID whose document row was already replaced.
  const { row, lambdas, conflicts, mcp, docs } = await db
    .transaction()
    .setIsolationLevel('repeatable read')
    .setAccessMode('read only')
    .execute((trx) => readSnapshot(trx, account, agent));
  const byCid = new Map(docs.map((d) => [d.cid, d.doc_cbor]));
  const documents: AgentToolsReply['documents'] = mcp.map((e) => {
    const bytes = byCid.get(e.cid);
    if (bytes === undefined) throw new WireError(ErrorCodes.internal, `document ${e.name} is missing`);
    return { ...ToolDocumentColumn.decode(bytes), cid: e.cid };
  });
  const enabled: AgentToolDocument[] = [...documents.map(stripCid), ...lambdas.filter((l) => l.enabled).map(stripCid)];
  const reply: AgentToolsReply = {
    version: row?.version ?? 0,
    documents,
    conflicts,
    lambdas,
    index: renderToolIndex(documents, { style }),
    listing: renderToolListing(documents),
    providerTools: providerTools(enabled),
  };
  if (requested !== undefined) {
    const callable = new Set(documents.map((d) => d.name));
    const own = lambdas.map((l) => ({ name: l.name, kind: l.kind, enabled: l.enabled }));
    const names = promotableTools(callable, own, requested);
    const byName = new Map(enabled.map((d) => [d.name, d]));
    reply.promoted = { names, ...providerTools(names.map((n) => byName.get(n)).filter((d) => d !== undefined)) };
  }
  return reply;
}

function stripCid<T extends { cid: string }>(doc: T): Omit<T, 'cid'> {
  const { cid: _cid, ...rest } = doc;
  return rest;
}

export function serveAgentTools(bus: Bus, db: Db, style: ToolNameStyle): Subscription {
  // The decoder checks the request's shape; the ids' grammar and the names' bounds are checked here.
  return bus.serve(
    bus.subjects.projectorAgentTools,
    QueueGroups.projector,
    decodeAgentToolsRequest,
    async (req): Promise<AgentToolsReply> => {
      const account = requireId(req.account, 'account');
      const agent = requireId(req.agent, 'agent');
      const requested = req.requested === undefined ? undefined : nameList(req.requested, 'requested', MAX_REQUESTED);
      return readAgentTools(db, style, account, agent, requested);
    },
  );
}
