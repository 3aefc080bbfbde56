import { sql, type Kysely } from 'kysely';
import { encodePayload, type ServerStatus } from '@mcpx/contracts';
import type { Database } from '@mcpx/db';
import {
  DiscoveredToolsColumn,
  HeldChangesColumn,
  ServerToolsColumn,
  ToolChangeColumn,
  ToolContractColumn,
} from '@mcpx/stored';
import { contractCid, type RemoteTool } from '@mcpx/domain';
import { recordAudit, SYSTEM_SIGNER } from '../audit/audit-log.js';
import {
  discoveredTools,
  settledOwed,
  storedStatus,
  toRecord,
  type McpServerRecord,
} from '../catalog/mcp-servers.repository.js';
import { toolsHash } from '../catalog/remote-tools.js';
import {
  evaluatePins,
  heldStatus,
  pinModeOf,
  pinnedToolsHash,
  type AcceptedContract,
  type PinEvaluation,
  type PinMode,
  type StoredChange,
  type WantedChange,
} from './pin-policy.js';

type Q = Kysely<Database>;

/** Who made a pin decision, as the audit log and `accepted_by` record it. */
export interface PinActor {
  signer: string;
  role: string;
}

/** The outcome of a pinned write: the record as saved, whether agents' tools changed, and the reviews it requested. */
export interface PinnedWrite {
  saved: McpServerRecord;
  toolsChanged: boolean;
  requested: WantedChange[];
  withheld: Array<{ name: string; cid: string }>;
}

export async function acceptedContracts(
  db: Q,
  account: string,
  serverId: string,
): Promise<Map<string, AcceptedContract>> {
  const rows = await db
    .selectFrom('registry.tool_contracts')
    .select(['tool', 'cid', 'tool_cbor'])
    .where('account_id', '=', account)
    .where('server_id', '=', serverId)
    .execute();
  return new Map(
    rows.map((r) => [r.tool, { tool: r.tool, cid: r.cid, remote: ToolContractColumn.decode(r.tool_cbor) }]),
  );
}

export async function storedChanges(db: Q, account: string, serverId: string): Promise<Map<string, StoredChange>> {
  const rows = await db
    .selectFrom('registry.tool_changes')
    .select(['tool', 'cid', 'status'])
    .where('account_id', '=', account)
    .where('server_id', '=', serverId)
    .execute();
  return new Map(rows.map((r) => [r.tool, { tool: r.tool, cid: r.cid, status: r.status }]));
}

/** Accepts `tools` as they are (a pin's baseline, or one accepted change) for `actor`. */
export async function acceptContracts(
  trx: Q,
  account: string,
  serverId: string,
  tools: readonly RemoteTool[],
  actor: PinActor,
): Promise<void> {
  const seen = new Set<string>();
  const rows = [];
  for (const t of tools) {
    if (seen.has(t.name)) continue;
    seen.add(t.name);
    rows.push({
      account_id: account,
      server_id: serverId,
      tool: t.name,
      cid: contractCid(t),
      tool_cbor: ToolContractColumn.encode(t),
      accepted_by: actor.signer,
      accepted_at: new Date(),
    });
  }
  for (let i = 0; i < rows.length; i += 500) {
    await trx
      .insertInto('registry.tool_contracts')
      .values(rows.slice(i, i + 500))
      .onConflict((oc) =>
        oc.columns(['account_id', 'server_id', 'tool']).doUpdateSet((eb) => ({
          cid: eb.ref('excluded.cid'),
          tool_cbor: eb.ref('excluded.tool_cbor'),
          accepted_by: eb.ref('excluded.accepted_by'),
          accepted_at: eb.ref('excluded.accepted_at'),
        })),
      )
      .execute();
  }
}

/** Forgets a server's pins (it is no longer pinned): its accepted contracts and held changes. */
export async function clearPins(trx: Q, account: string, serverId: string): Promise<void> {
  await trx
    .deleteFrom('registry.tool_changes')
    .where('account_id', '=', account)
    .where('server_id', '=', serverId)
    .execute();
  await trx
    .deleteFrom('registry.tool_contracts')
    .where('account_id', '=', account)
    .where('server_id', '=', serverId)
    .execute();
  await trx
    .updateTable('registry.mcp_servers')
    .set({ discovered_cbor: null, discovered_hash: '', held_cbor: null })
    .where('account_id', '=', account)
    .where('id', '=', serverId)
    .execute();
}

/**
 * Brings the held changes of a row-locked pinned server in line with `raw` (its list as the server
 * gave it) and writes what agents get: `tools_cbor` (the accepted contracts), its hash and
 * generation (moved on only when that changed), the raw list and the held changes. A first
 * pinned listing with nothing accepted yet is the pin's baseline: accepted as it is.
 */
export async function applyPins(
  trx: Q,
  locked: McpServerRecord,
  raw: RemoteTool[],
  rawHash: string,
  extra: { status?: ServerStatus; nextProbeAt?: Date | null; actor?: PinActor; owedUpTo?: Date } = {},
): Promise<PinnedWrite> {
  const mode = pinModeOf(locked.config);
  if (mode === 'off') throw new Error('applyPins on a server that is not pinned');
  const account = locked.accountId;
  let accepted = await acceptedContracts(trx, account, locked.id);
  if (accepted.size === 0 && (locked.discoveredHash ?? '') === '') {
    // Trust on first use: the owner saw this list when pinning (SetMcpServer answers with it).
    await acceptContracts(trx, account, locked.id, raw, extra.actor ?? SYSTEM_SIGNER);
    await recordAudit(trx, {
      account,
      ...(extra.actor ?? SYSTEM_SIGNER),
      action: 'PinBaseline',
      target: { kind: 'server', name: locked.name },
      after: { pin: mode, tools: raw.map((t) => ({ name: t.name, cid: contractCid(t) })).slice(0, 1000) },
    });
    accepted = await acceptedContracts(trx, account, locked.id);
  }
  const evaluation: PinEvaluation = evaluatePins(raw, accepted, await storedChanges(trx, account, locked.id), mode);
  if (evaluation.resolved.length > 0) {
    await trx
      .deleteFrom('registry.tool_changes')
      .where('account_id', '=', account)
      .where('server_id', '=', locked.id)
      .where('tool', 'in', evaluation.resolved)
      .execute();
  }
  const requested = evaluation.changes.filter((c) => c.requested);
  for (const c of requested) await holdChange(trx, locked, c, mode);
  const hash = pinnedToolsHash(evaluation.effective, evaluation.withheld);
  const toolsChanged = hash !== locked.toolsHash;
  const held = heldStatus(evaluation.changes);
  const row = await trx
    .updateTable('registry.mcp_servers')
    .set({
      tools_cbor: ServerToolsColumn.encode(evaluation.effective),
      tools_hash: hash,
      generation: sql<number>`CASE WHEN tools_hash = ${hash} THEN generation ELSE generation + 1 END`,
      discovered_cbor: DiscoveredToolsColumn.encode(raw),
      discovered_hash: rawHash,
      held_cbor: held.length > 0 ? HeldChangesColumn.encode(held) : null,
      updated_at: new Date(),
      ...(extra.status !== undefined ? { status_cbor: encodePayload(storedStatus(extra.status)) } : {}),
      ...(extra.nextProbeAt !== undefined ? { next_probe_at: extra.nextProbeAt } : {}),
      // A discovery's record settles what was owed to the save it started from (see upsertConfig).
      ...(extra.owedUpTo !== undefined ? { discovery_owed_at: settledOwed(extra.owedUpTo) } : {}),
    })
    .where('account_id', '=', account)
    .where('id', '=', locked.id)
    .returningAll()
    .executeTakeFirstOrThrow();
  return { saved: toRecord(row), toolsChanged, requested, withheld: evaluation.withheld };
}

/** Holds one change for review (a pending row replacing any earlier one of the tool), audited. */
async function holdChange(trx: Q, locked: McpServerRecord, c: WantedChange, mode: PinMode): Promise<void> {
  const account = locked.accountId;
  const row = {
    cid: c.cid,
    tool_cbor: ToolChangeColumn.encode(c.remote),
    previous_cid: c.previousCid,
    kind: c.kind,
    compatible: c.compatible,
    status: 'pending' as const,
    detected_at: new Date(),
    decided_by: null,
    decided_at: null,
  };
  await trx
    .insertInto('registry.tool_changes')
    .values({ account_id: account, server_id: locked.id, tool: c.tool, ...row })
    .onConflict((oc) => oc.columns(['account_id', 'server_id', 'tool']).doUpdateSet(row))
    .execute();
  await recordAudit(trx, {
    account,
    ...SYSTEM_SIGNER,
    action: 'ToolChangeHeld',
    target: { kind: 'tool', name: `${locked.name}/${c.tool}` },
    before: c.previousCid === null ? null : { cid: c.previousCid },
    after: { cid: c.cid, kind: c.kind, compatible: c.compatible, withheld: c.withheld, pin: mode },
  });
}

/** Row-locks a server by id and returns its record and its raw list. */
export async function lockServer(
  trx: Q,
  account: string,
  id: string,
): Promise<{ record: McpServerRecord; raw: RemoteTool[] } | null> {
  const row = await trx
    .selectFrom('registry.mcp_servers')
    .selectAll()
    .where('account_id', '=', account)
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst();
  return row === undefined ? null : { record: toRecord(row), raw: discoveredTools(row) };
}

/**
 * Records a successful discovery of a pinned server whose list changed since the last one: in the
 * caller's transaction (the one its event is written in) with the server's row locked (a review decided meanwhile is seen, never undone).
 * Null when the server went meanwhile, or is no longer pinned (the caller records it plainly).
 */
export async function recordPinnedDiscovery(
  trx: Q,
  server: McpServerRecord,
  status: ServerStatus,
  raw: RemoteTool[],
  nextProbeAt: Date | null,
): Promise<PinnedWrite | null> {
  const locked = await lockServer(trx, server.accountId, server.id);
  if (locked === null || pinModeOf(locked.record.config) === 'off') return null;
  return applyPins(trx, locked.record, raw, toolsHash(raw), { status, nextProbeAt, owedUpTo: server.updatedAt });
}
