import { createHash } from 'node:crypto';
import type { HeldToolStatus } from '@mcpx/contracts';
import {
  contractCid,
  encodeCanonical,
  inheritPermission,
  inputCompatible,
  normalizeAnnotations,
  Permission,
  toolContract,
  type RemoteTool,
} from '@mcpx/domain';
import { toolsHash } from '../catalog/remote-tools.js';

/**
 * A server's pin policy (`SetMcpServer` `config.pin`):
 * - `off`: agents get what the server lists (as before pinning existed);
 * - `review`: agents get the contracts an owner accepted. A changed contract is held for review;
 *   agents keep the accepted one while the new input schema still admits what the accepted one
 *   did (and the tool does not now say it is destructive), else the tool is withheld. A new tool
 *   is withheld until accepted;
 * - `strict`: any held change withholds the tool.
 * A tool the server no longer lists goes, as without pinning.
 */
export const PinModes = { off: 'off', review: 'review', strict: 'strict' } as const;
export type PinMode = (typeof PinModes)[keyof typeof PinModes];

export function isPinMode(v: unknown): v is PinMode {
  return v === PinModes.off || v === PinModes.review || v === PinModes.strict;
}

/** The server's mode: its config's, else off (servers stored before pinning existed). */
export function pinModeOf(config: { pin?: unknown }): PinMode {
  return isPinMode(config.pin) ? config.pin : PinModes.off;
}

/** An accepted contract: the remote tool as it was accepted, and its contract CID. */
export interface AcceptedContract {
  tool: string;
  cid: string;
  remote: RemoteTool;
}

/** A change as stored (one per tool). */
export interface StoredChange {
  tool: string;
  cid: string;
  status: 'pending' | 'rejected';
}

/** A change as the evaluation wants it stored. */
export interface WantedChange {
  tool: string;
  cid: string;
  remote: RemoteTool;
  kind: 'new' | 'changed';
  previousCid: string | null;
  compatible: boolean;
  status: 'pending' | 'rejected';
  withheld: boolean;
  /** Not held before under this CID: a review is requested. */
  requested: boolean;
}

export interface PinEvaluation {
  /** What agents get, in the server's order. */
  effective: RemoteTool[];
  /** Every held change (pending or rejected), one per tool. */
  changes: WantedChange[];
  /** Tools withheld from agents: remote name and held CID. */
  withheld: Array<{ name: string; cid: string }>;
  /** Stored changes that no longer apply (the tool went, or is back to its accepted contract). */
  resolved: string[];
}

function raisesLevel(accepted: RemoteTool, next: RemoteTool): boolean {
  const level = (t: RemoteTool) =>
    inheritPermission(normalizeAnnotations(t.annotations), { builtin: false, toolName: t.name });
  return level(accepted) === Permission.act && level(next) === Permission.always_ask;
}

/**
 * Compares a listing with the accepted contracts (pure). `raw` is the screened list the server
 * gave; a repeated name keeps its first entry, as documents do.
 */
export function evaluatePins(
  raw: readonly RemoteTool[],
  accepted: ReadonlyMap<string, AcceptedContract>,
  stored: ReadonlyMap<string, StoredChange>,
  mode: Exclude<PinMode, 'off'>,
): PinEvaluation {
  const effective: RemoteTool[] = [];
  const changes: WantedChange[] = [];
  const withheld: Array<{ name: string; cid: string }> = [];
  const seen = new Set<string>();
  for (const tool of raw) {
    if (seen.has(tool.name)) continue;
    seen.add(tool.name);
    const cid = contractCid(tool);
    const acc = accepted.get(tool.name);
    if (acc !== undefined && acc.cid === cid) {
      effective.push(tool);
      continue;
    }
    const compatible =
      acc !== undefined &&
      mode === PinModes.review &&
      inputCompatible(toolContract(acc.remote).inputSchema, toolContract(tool).inputSchema).compatible &&
      !raisesLevel(acc.remote, tool);
    const prior = stored.get(tool.name);
    const same = prior !== undefined && prior.cid === cid;
    changes.push({
      tool: tool.name,
      cid,
      remote: tool,
      kind: acc === undefined ? 'new' : 'changed',
      previousCid: acc?.cid ?? null,
      compatible,
      status: same ? prior.status : 'pending',
      withheld: !compatible,
      requested: !same,
    });
    if (compatible) effective.push(acc.remote);
    else withheld.push({ name: tool.name, cid });
  }
  const held = new Set(changes.map((c) => c.tool));
  const resolved = [...stored.keys()].filter((t) => !held.has(t));
  return { effective, changes, withheld, resolved };
}

/** The held changes as the server's status shows them. */
export function heldStatus(changes: readonly WantedChange[]): HeldToolStatus[] {
  return changes.map((c) => ({
    name: c.tool,
    cid: c.cid,
    reason: 'held_for_review',
    state: c.status,
    withheld: c.withheld,
  }));
}

/**
 * The hash of what agents get from a pinned server: the tool list's own hash when nothing is
 * withheld (so pinning a server changes nothing until a change is held), else one over the list
 * and the withheld tools (a tool withheld or released is a change of the server's projection).
 */
export function pinnedToolsHash(
  effective: RemoteTool[],
  withheld: ReadonlyArray<{ name: string; cid: string }>,
): string {
  if (withheld.length === 0) return toolsHash(effective);
  return createHash('sha256')
    .update(encodeCanonical({ tools: effective, held: withheld }))
    .digest('hex');
}
