import { randomUUID } from 'node:crypto';
import type { Subscription } from '@nats-io/transport-node';
import type { Bus } from '@mcpx/bus';
import {
  ErrorCodes,
  QueueGroups,
  WireError,
  decodeDeleteLambdaToolRequest,
  decodeSetLambdaToolRequest,
  lambdaToolDocument,
  type DeleteLambdaToolRequest,
  type LambdaToolReply,
  type SetLambdaToolRequest,
} from '@mcpx/contracts';
import type { Kysely } from 'kysely';
import type { Database, Db } from '@mcpx/db';
import type { Logger } from '@mcpx/log';
import { agentSet, lockAgent, mcpEntries, nextPending, upsertAgentRow } from './agent-sets.js';
import { LambdaToolColumn } from './lambda-tools.column.js';
import type { AgentChange, ChangeLog } from './change-log.js';
import { requireId } from './request-fields.js';
import { diffToolMaps, isEmptyDiff } from './tools-diff.js';

export interface LambdaToolsDeps {
  db: Db;
  log: Logger;
  changes: ChangeLog;
}

function refuseMcp(name: string, server: string, verb: string): WireError {
  return new WireError(
    ErrorCodes.conflict,
    `${name} is a tool of the ${server} MCP server and cannot be ${verb} as a lambda; disable the ${server} server for this agent instead`,
    {
      field: 'name',
      server,
    },
  );
}

/**
 * The lambda actions. A lambda (an authored tool) may take a free name, or replace itself; it may
 * never take the name of an mcp tool in the agent's set, and an mcp document can be neither
 * replaced nor deleted this way: the typed `conflict` error says to disable the server instead.
 * A lambda that holds a name keeps it when an mcp tool of that name arrives later (a conflict).
 */
export class LambdaTools {
  constructor(private readonly deps: LambdaToolsDeps) {}

  async set(req: SetLambdaToolRequest): Promise<LambdaToolReply> {
    const account = requireId(req.account, 'account');
    const agent = requireId(req.agent, 'agent');
    const { doc, cid } = lambdaToolDocument(req.name, req.document);
    // The registry recorded the document by the CID it computed: another one is not saved (a
    // registry and a projector that disagree on the document's rule), so no entry names what is not stored.
    if (req.cid !== undefined && req.cid !== cid)
      throw new WireError(
        ErrorCodes.internal,
        'the projector computes another CID for this document than the registry recorded: nothing was saved',
      );
    const docCbor = LambdaToolColumn.encode(doc);
    return this.change(account, agent, doc.name, async (trx, servers, lambdas) => {
      const mcp = (await mcpEntries(trx, account, servers)).find((e) => e.name === doc.name);
      if (mcp !== undefined && !lambdas.has(doc.name)) throw refuseMcp(doc.name, mcp.server, 'replaced');
      await trx
        .insertInto('projector.lambda_tools')
        .values({ account_id: account, agent_id: agent, name: doc.name, cid, doc_cbor: docCbor })
        .onConflict((oc) => oc.columns(['account_id', 'agent_id', 'name']).doUpdateSet({ cid, doc_cbor: docCbor }))
        .execute();
      return cid;
    });
  }

  async delete(req: DeleteLambdaToolRequest): Promise<LambdaToolReply> {
    const account = requireId(req.account, 'account');
    const agent = requireId(req.agent, 'agent');
    const name = requireId(req.name, 'name');
    return this.change(account, agent, name, async (trx, servers, lambdas) => {
      if (!lambdas.has(name)) {
        const mcp = (await mcpEntries(trx, account, servers)).find((e) => e.name === name);
        if (mcp !== undefined) throw refuseMcp(name, mcp.server, 'deleted');
        throw new WireError(ErrorCodes.notFound, `no lambda named ${name}`, { field: 'name' });
      }
      await trx
        .deleteFrom('projector.lambda_tools')
        .where('account_id', '=', account)
        .where('agent_id', '=', agent)
        .where('name', '=', name)
        .execute();
      return undefined;
    });
  }

  /** Runs one lambda write under the agent's lock and publishes the agent's change, if any. */
  private async change(
    account: string,
    agent: string,
    name: string,
    write: (trx: Kysely<Database>, servers: string[], lambdas: Set<string>) => Promise<string | undefined>,
  ): Promise<LambdaToolReply> {
    const changeId = `l:${account}:${agent}:${randomUUID()}`;
    const result = await this.deps.db.transaction().execute(async (trx) => {
      const current = await lockAgent(trx, account, agent, []);
      const servers = current?.servers ?? [];
      const before = await agentSet(trx, account, agent, servers);
      const lambdaRows = await trx
        .selectFrom('projector.lambda_tools')
        .select('name')
        .where('account_id', '=', account)
        .where('agent_id', '=', agent)
        .execute();
      const cid = await write(trx, servers, new Set(lambdaRows.map((r) => r.name)));
      const after = await agentSet(trx, account, agent, servers);
      const diff = diffToolMaps(before.tools, after.tools);
      if (isEmptyDiff(diff)) return { cid, version: current?.version ?? 1, change: null };
      const version = (current?.version ?? 0) + 1;
      const pending = await nextPending(trx, account, current?.pending ?? null, { change: changeId, version, ...diff });
      await upsertAgentRow(trx, account, agent, { servers, revision: current?.revision ?? 0, version, pending });
      await this.deps.changes.open(trx, account, changeId);
      const change: AgentChange = { agent, version, diff };
      return { cid, version, change };
    });
    if (result.change !== null) await this.deps.changes.publish(account, changeId, [result.change]);
    this.deps.log.info(result.cid === undefined ? 'lambda deleted' : 'lambda saved', {
      account,
      agent,
      name,
      version: result.version,
    });
    return result.cid === undefined
      ? { name, version: result.version }
      : { name, cid: result.cid, version: result.version };
  }
}

/** Serves SetLambdaTool and DeleteLambdaTool over request/reply. */
export function serveLambdaTools(bus: Bus, lambdas: LambdaTools): Subscription[] {
  return [
    bus.serve(bus.subjects.projectorLambdaSet, QueueGroups.projector, decodeSetLambdaToolRequest, (req) =>
      lambdas.set(req),
    ),
    bus.serve(bus.subjects.projectorLambdaDelete, QueueGroups.projector, decodeDeleteLambdaToolRequest, (req) =>
      lambdas.delete(req),
    ),
  ];
}
