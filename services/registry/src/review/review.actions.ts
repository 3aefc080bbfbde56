import {
  ErrorCodes,
  REVIEW_CHANGES_MAX,
  WireError,
  type ActionResponse,
  type ToolChangeView,
  type ToolReviewRequestedEvent,
} from '@mcpx/contracts';
import {
  buildToolDocuments,
  contractCid,
  contractWarnings,
  diffContracts,
  documentCid,
  inputCompatible,
  projectToolNames,
  toolContract,
  type RemoteTool,
} from '@mcpx/domain';
import { ToolChangeColumn } from '@mcpx/stored';
import { metrics, trace } from '@opentelemetry/api';
import { recordAudit } from '../audit/audit-log.js';
import { serverDiscovered } from '../catalog/server-events.js';
import type { ReviewAction, ReviewDeps } from './review-deps.js';
import type { ActionInput, Caller } from '../shared/action-handler.js';
import { discoveredTools, type McpServerRecord } from '../catalog/mcp-servers.repository.js';
import { evaluatePins, pinModeOf, type AcceptedContract, type WantedChange } from './pin-policy.js';
import { acceptContracts, acceptedContracts, applyPins, lockServer } from './pin-store.js';
import type { Database } from '@mcpx/db';
import type { Kysely } from 'kysely';

/** Reviews are an OWNER's; a WRITER's only where the operator's policy lets writers review (`PIN_WRITERS_MAY_REVIEW`). */
function mayReview(deps: ReviewDeps, caller: Caller): void {
  if (caller.role === 'OWNER') return;
  if (caller.role === 'WRITER' && deps.pins?.writersMayReview === true) return;
  throw new WireError(
    ErrorCodes.forbidden,
    `signer: a ${caller.role} signer may not decide a tool review here (only an OWNER${deps.pins?.writersMayReview === true ? ' or a WRITER' : ''})`,
    {
      field: 'signer',
    },
  );
}

/**
 * `ListToolChanges {server?, status?: 'pending'|'rejected'|'all'}` → `{changes: ToolChangeView[]}`:
 * the held changes of the account's pinned servers (pending by default), each with its diff
 * against the accepted contract and its warnings.
 */
export const listToolChanges: ReviewAction<'ListToolChanges'> = async (deps, caller, action) => {
  const only = action.server;
  const status = action.status ?? 'pending';
  const servers = await deps.servers.list(caller.account);
  const pinned = servers.filter((s) => pinModeOf(s.config) !== 'off' && (only === undefined || s.name === only));
  if (only !== undefined && !servers.some((s) => s.name === only))
    throw new WireError(ErrorCodes.notFound, `server: no MCP server named ${only}`, { field: 'server' });
  let query = deps.db.selectFrom('registry.tool_changes').selectAll().where('account_id', '=', caller.account);
  if (status !== 'all') query = query.where('status', '=', status);
  const rows =
    pinned.length === 0
      ? []
      : await query
          .where(
            'server_id',
            'in',
            pinned.map((s) => s.id),
          )
          .orderBy('detected_at')
          .orderBy('tool')
          .execute();
  // Every tool name of the account: a description naming another server's tool is worth a look.
  const names = servers.flatMap((s) => {
    const projected = projectToolNames(
      s.name,
      s.tools.map((t) => t.name),
      deps.style,
    );
    return s.tools.flatMap((t) => [t.name, projected.get(t.name) ?? t.name]);
  });
  const byId = new Map(pinned.map((s) => [s.id, s]));
  const contracts = new Map<string, Map<string, AcceptedContract>>();
  const listings = new Map<string, Promise<ServerListing>>();
  const changes: ToolChangeView[] = [];
  for (const row of rows) {
    const server = byId.get(row.server_id);
    if (server === undefined) continue;
    let accepted = contracts.get(server.id);
    if (accepted === undefined) {
      accepted = await acceptedContracts(deps.db, caller.account, server.id);
      contracts.set(server.id, accepted);
    }
    const remote = ToolChangeColumn.decode(row.tool_cbor);
    let listing = listings.get(server.id);
    if (listing === undefined) {
      listing = serverListing(deps, server);
      listings.set(server.id, listing);
    }
    changes.push(await changeView(deps, server, row, remote, accepted, names, await listing));
  }
  return { changes };
};

async function changeView(
  deps: ReviewDeps,
  server: McpServerRecord,
  row: {
    tool: string;
    cid: string;
    previous_cid: string | null;
    kind: 'new' | 'changed';
    status: 'pending' | 'rejected';
    compatible: boolean;
    detected_at: Date;
    decided_by: string | null;
    decided_at: Date | null;
  },
  remote: RemoteTool,
  accepted: ReadonlyMap<string, AcceptedContract>,
  names: readonly string[],
  listing: ServerListing,
): Promise<ToolChangeView> {
  const previous = accepted.get(row.tool);
  const before = previous === undefined ? undefined : toolContract(previous.remote);
  const after = toolContract(remote);
  const mode = pinModeOf(server.config) === 'strict' ? 'strict' : 'review';
  const held = (server.status.heldTools ?? []).find((h) => h.name === row.tool);
  const incompatibility = before === undefined ? [] : inputCompatible(before.inputSchema, after.inputSchema).reasons;
  const projected = projectToolNames(server.name, [...server.tools.map((t) => t.name), row.tool], deps.style);
  return {
    server: server.name,
    tool: row.tool,
    toolName: projected.get(row.tool) ?? row.tool,
    kind: row.kind,
    status: row.status,
    cid: row.cid,
    ...(row.previous_cid !== null ? { previousCid: row.previous_cid } : {}),
    withheld: held?.withheld ?? !row.compatible,
    compatible: row.compatible,
    ...(incompatibility.length > 0 ? { incompatibility } : {}),
    ...documentCidOnAccept(deps, server, remote, accepted, listing),
    pin: mode,
    detectedAt: row.detected_at.toISOString(),
    ...(row.decided_by !== null ? { decidedBy: row.decided_by } : {}),
    ...(row.decided_at !== null ? { decidedAt: row.decided_at.toISOString() } : {}),
    ...(before !== undefined ? { before } : {}),
    after,
    diff: diffContracts(before, after),
    // The account's tool names and this server's accepted ones (a lookalike of a tool the server just dropped counts).
    warnings: contractWarnings({
      tool: remote,
      contract: after,
      ...(before !== undefined ? { previous: before } : {}),
      otherTools: [...new Set([...names, ...accepted.keys()])].filter((n) => n !== row.tool),
    }),
  };
}

/** A pinned server's last listing and the owner's overrides: what the document on acceptance is built from. */
interface ServerListing {
  raw: RemoteTool[] | null;
  overrides: Record<string, 'act' | 'always_ask'>;
}

async function serverListing(deps: ReviewDeps, server: McpServerRecord): Promise<ServerListing> {
  const [row, overrides] = await Promise.all([
    deps.db
      .selectFrom('registry.mcp_servers')
      .select('discovered_cbor')
      .where('account_id', '=', server.accountId)
      .where('id', '=', server.id)
      .executeTakeFirst(),
    deps.permissions.forServer(server.accountId, server.id),
  ]);
  return { raw: row === undefined || row.discovered_cbor === null ? null : discoveredTools(row), overrides };
}

/** The document agents get once `remote` is accepted: built from the list acceptance would give, with the owner's overrides. */
function documentCidOnAccept(
  deps: ReviewDeps,
  server: McpServerRecord,
  remote: RemoteTool,
  accepted: ReadonlyMap<string, AcceptedContract>,
  listing: ServerListing,
): { documentCid?: string } {
  if (listing.raw === null) return {};
  // Accepting makes the held contract the accepted one: evaluate with it.
  const next = new Map(accepted);
  next.set(remote.name, { tool: remote.name, cid: contractCid(remote), remote });
  const { effective } = evaluatePins(
    listing.raw,
    next,
    new Map(),
    pinModeOf(server.config) === 'strict' ? 'strict' : 'review',
  );
  const doc = buildToolDocuments(server.name, effective, { style: deps.style, overrides: listing.overrides }).find(
    (d) => d.remoteName === remote.name,
  );
  return doc === undefined ? {} : { documentCid: documentCid(doc) };
}

/** The change `{server, tool, cid}` names, locked with its server; typed errors naming the field otherwise. */
async function decideChange(
  deps: ReviewDeps,
  caller: Caller,
  action: ActionInput<'AcceptToolChange' | 'RejectToolChange'>,
  decision: 'accept' | 'reject',
): Promise<{
  server: McpServerRecord;
  view: ActionResponse<'AcceptToolChange' | 'RejectToolChange'>;
  toolsChanged: boolean;
}> {
  mayReview(deps, caller);
  const { server: name, tool, cid } = action;
  const server = await deps.servers.find(caller.account, name);
  if (server === null)
    throw new WireError(ErrorCodes.notFound, `server: no MCP server named ${name}`, { field: 'server' });
  // The decision and its discovered event commit together (the outbox).
  return deps.outbox.commit(async (trx, emit) => {
    const locked = await lockServer(trx, caller.account, server.id);
    if (locked === null)
      throw new WireError(ErrorCodes.notFound, `server: no MCP server named ${name}`, { field: 'server' });
    if (pinModeOf(locked.record.config) === 'off')
      throw new WireError(ErrorCodes.conflict, `server: ${name} is not pinned (config.pin is off)`, {
        field: 'server',
      });
    const held = { account: caller.account, serverId: server.id, server: name, tool, cid };
    const change = await heldChange(trx, held, decision);
    const actor = { signer: caller.signer, role: caller.role };
    const previous = await trx
      .selectFrom('registry.tool_contracts')
      .select('cid')
      .where('account_id', '=', caller.account)
      .where('server_id', '=', server.id)
      .where('tool', '=', tool)
      .executeTakeFirst();
    await writeDecision(trx, held, change, decision, caller.signer, actor);
    // What agents get follows from the server's last listing and the contracts now accepted.
    const written = await applyPins(trx, locked.record, locked.raw, locked.record.discoveredHash ?? '', { actor });
    await recordAudit(trx, {
      account: caller.account,
      ...actor,
      action: decision === 'accept' ? 'AcceptToolChange' : 'RejectToolChange',
      target: { kind: 'tool', name: `${name}/${tool}` },
      before: { cid: previous?.cid ?? null, status: change.status },
      after: decision === 'accept' ? { cid, accepted: true } : { cid, status: 'rejected' },
    });
    const heldNow = (written.saved.status.heldTools ?? []).find((h) => h.name === tool);
    emit(
      serverDiscovered(
        deps.bus.subjects,
        written.saved,
        written.toolsChanged,
        await deps.permissions.forServer(caller.account, server.id, trx),
      ),
    );
    return {
      server: written.saved,
      toolsChanged: written.toolsChanged,
      view: {
        server: name,
        tool,
        cid,
        decision: decision === 'accept' ? 'accepted' : 'rejected',
        ...(heldNow !== undefined ? { withheld: heldNow.withheld } : {}),
      },
    };
  });
}

/** The change a decision names, as held now. */
interface HeldChange {
  account: string;
  serverId: string;
  server: string;
  tool: string;
  cid: string;
}

/**
 * The held change of `held.tool`, if it is still the one the reviewer saw (`held.cid`): a change
 * the server made again since is a `conflict` naming the current one; rejecting twice is one too.
 */
async function heldChange(trx: Kysely<Database>, held: HeldChange, decision: 'accept' | 'reject') {
  const { tool, cid } = held;
  const change = await trx
    .selectFrom('registry.tool_changes')
    .selectAll()
    .where('account_id', '=', held.account)
    .where('server_id', '=', held.serverId)
    .where('tool', '=', tool)
    .executeTakeFirst();
  if (change === undefined)
    throw new WireError(ErrorCodes.notFound, `tool: no change of ${tool} is held on ${held.server}`, { field: 'tool' });
  if (change.cid !== cid) {
    throw new WireError(
      ErrorCodes.conflict,
      `cid: the change of ${tool} held now is ${change.cid} (the server changed it again); review that one`,
      { field: 'cid', current: change.cid },
    );
  }
  if (decision === 'reject' && change.status === 'rejected')
    throw new WireError(ErrorCodes.conflict, `cid: the change ${cid} of ${tool} is already rejected`, {
      field: 'cid',
    });
  return change;
}

/** Accepted: the held contract becomes the accepted one and the change goes. Rejected: the change stays, marked. */
async function writeDecision(
  trx: Kysely<Database>,
  held: HeldChange,
  change: { tool_cbor: Uint8Array },
  decision: 'accept' | 'reject',
  signer: string,
  actor: Parameters<typeof acceptContracts>[4],
): Promise<void> {
  if (decision === 'accept') {
    await acceptContracts(trx, held.account, held.serverId, [ToolChangeColumn.decode(change.tool_cbor)], actor);
    await trx
      .deleteFrom('registry.tool_changes')
      .where('account_id', '=', held.account)
      .where('server_id', '=', held.serverId)
      .where('tool', '=', held.tool)
      .execute();
  } else {
    await trx
      .updateTable('registry.tool_changes')
      .set({ status: 'rejected', decided_by: signer, decided_at: new Date() })
      .where('account_id', '=', held.account)
      .where('server_id', '=', held.serverId)
      .where('tool', '=', held.tool)
      .execute();
  }
}

/**
 * `AcceptToolChange {server, tool, cid}` → `{server, tool, cid, decision: 'accepted'}`: the held
 * contract `cid` becomes the accepted one, and agents get it (one discovery event: the projector
 * re-projects that tool, each granting agent gets one agent-tools-changed). A `cid` that is no
 * longer the held one (the server changed the tool again) is a `conflict` naming the current one.
 */
export const acceptToolChange: ReviewAction<'AcceptToolChange'> = async (deps, caller, action) =>
  announced(deps, caller, await decideChange(deps, caller, action, 'accept'));

/**
 * `RejectToolChange {server, tool, cid}` → `{…, decision: 'rejected'}`: the change stays held
 * (withheld, or the accepted contract kept) and is not asked about again while the server keeps
 * offering that same contract; a different one is a new review.
 */
export const rejectToolChange: ReviewAction<'RejectToolChange'> = async (deps, caller, action) =>
  announced(deps, caller, await decideChange(deps, caller, action, 'reject'));

/** A decision counted, marked on the span and logged; its view is the action's answer. */
function announced(
  deps: ReviewDeps,
  caller: Caller,
  decided: { server: McpServerRecord; view: ActionResponse<'AcceptToolChange' | 'RejectToolChange'> },
): ActionResponse<'AcceptToolChange' | 'RejectToolChange'> {
  const { server, view } = decided;
  observeDecision(view.decision, server.name, view.tool);
  deps.log.info(`tool change ${view.decision}`, {
    account: caller.account,
    server: server.name,
    tool: view.tool,
    cid: view.cid,
  });
  return view;
}

let decisions: ReturnType<ReturnType<typeof metrics.getMeter>['createCounter']> | undefined;

/** Counts a decision (`mcpx_pin_reviews_total{decision}`) and marks the action's span with it. */
function observeDecision(decision: 'accepted' | 'rejected', server: string, tool: string): void {
  decisions ??= metrics
    .getMeter('mcpx-registry')
    .createCounter('mcpx_pin_reviews_total', { description: 'Tool changes accepted or rejected by a reviewer' });
  decisions.add(1, { decision });
  trace.getActiveSpan()?.setAttributes({ 'mcpx.review.decision': decision, 'mcp.server': server, 'mcp.tool': tool });
}

/** The review-requested notification (core NATS, at most once): which tools of which server wait. */
export function publishReviewRequested(
  deps: { bus: ReviewDeps['bus'] },
  server: McpServerRecord,
  changes: ReadonlyArray<Pick<WantedChange, 'tool' | 'cid' | 'kind' | 'withheld'>>,
): void {
  deps.bus.notify<ToolReviewRequestedEvent>(deps.bus.subjects.reviewRequested(server.accountId), {
    account: server.accountId,
    server: server.name,
    changes: changes
      .slice(0, REVIEW_CHANGES_MAX)
      .map((c) => ({ tool: c.tool, cid: c.cid, kind: c.kind, withheld: c.withheld })),
    pending: (server.status.heldTools ?? []).filter((h) => h.state === 'pending').length,
  });
}
