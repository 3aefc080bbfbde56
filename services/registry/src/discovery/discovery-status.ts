import type { ServerStatus, Transport } from '@mcpx/contracts';
import type { RemoteTool } from '@mcpx/domain';
import { isPostgresUnavailable } from '@mcpx/db';
import type { EraVerdict } from '@mcpx/mcp-client';
import { isRedisUnavailable } from '@mcpx/shared-state';
import type { McpServerRecord } from '../catalog/mcp-servers.repository.js';
import { sanitizeTools, screenTools, toolsHash } from '../catalog/remote-tools.js';
import type { ProbeOutcome } from './discovery-types.js';

/** A listing to record: the tools, their hash and the generation they are recorded under. */
export type RecordedTools = { list: RemoteTool[]; hash: string; generation: number };

/** What an outcome makes of a server's status: the new status, and what changed in its list. */
export interface StatusChange {
  status: ServerStatus;
  /** The listing to record (absent: a failure, or a pinned server's listing, recorded by the pins). */
  tools?: RecordedTools;
  /** The list agents see changed. */
  changed: boolean;
  /** A pinned server's listing differs from the last one it listed (the pins decide what agents see). */
  rawChanged: boolean;
}

/**
 * The status an outcome gives `server` at `now`: a listing is `ok` and replaces the list (a
 * pinned server's is held for the pins to weigh); a failure keeps the last good list and what
 * was learnt with it, and counts one more failure in a row.
 */
export function statusAfter(server: McpServerRecord, outcome: ProbeOutcome, now: Date, pinned: boolean): StatusChange {
  const previous = server.status;
  if (outcome.tools === undefined) {
    const status: ServerStatus = {
      state: outcome.authRequired ? 'auth_required' : 'error',
      error: outcome.error ?? 'discovery failed',
      ...(outcome.summary !== undefined ? { summary: outcome.summary } : {}),
      checkedAt: now.toISOString(),
      failures: (previous.failures ?? 0) + 1,
      ...(previous.lastOkAt ? { lastOkAt: previous.lastOkAt } : {}),
      ...(previous.transport ? { transport: previous.transport } : {}),
      // The last good list stands, and with it what was learnt with it.
      ...(previous.era !== undefined ? { era: previous.era } : {}),
      ...(previous.protocolVersion !== undefined ? { protocolVersion: previous.protocolVersion } : {}),
      ...(previous.skippedTools !== undefined ? { skippedTools: previous.skippedTools } : {}),
    };
    return { status, changed: false, rawChanged: false };
  }
  const hash = toolsHash(outcome.tools);
  // A pinned server: agents get the accepted contracts. A listing equal to the last one costs
  // what an unpinned one does (one hash, no tool list written).
  const rawChanged = pinned && hash !== (server.discoveredHash ?? '');
  const changed = !pinned && hash !== server.toolsHash;
  const tools = pinned
    ? undefined
    : { list: outcome.tools, hash, generation: changed ? server.generation + 1 : server.generation };
  const hints = outcome.hints ?? {
    ...(previous.listTtlMs !== undefined ? { ttlMs: previous.listTtlMs } : {}),
    ...(previous.listCacheScope !== undefined ? { cacheScope: previous.listCacheScope } : {}),
  };
  const era =
    outcome.verdict ??
    (previous.era !== undefined && previous.protocolVersion !== undefined
      ? { era: previous.era, protocolVersion: previous.protocolVersion }
      : undefined);
  const status: ServerStatus = {
    state: 'ok',
    checkedAt: now.toISOString(),
    lastOkAt: now.toISOString(),
    ...(outcome.transport ? { transport: outcome.transport } : {}),
    ...(era !== undefined ? { era: era.era, protocolVersion: era.protocolVersion } : {}),
    ...(outcome.skipped !== undefined && outcome.skipped.length > 0 ? { skippedTools: outcome.skipped } : {}),
    // A proxy's listing carries no hints: the ones of the last discovery stand.
    ...(hints.ttlMs !== undefined ? { listTtlMs: hints.ttlMs } : {}),
    ...(hints.cacheScope !== undefined ? { listCacheScope: hints.cacheScope } : {}),
  };
  return { status, ...(tools !== undefined ? { tools } : {}), changed, rawChanged };
}

/**
 * After too many failures in a row the re-prober stops (the status says so); an owner's set or
 * refresh probes again and arms one more re-probe.
 */
export function withReprobeStop(
  status: ServerStatus,
  trigger: string,
  maxFailures: number,
): { status: ServerStatus; stopped: boolean } {
  const byOwner = trigger === 'set' || trigger === 'authorized' || trigger === 'refresh';
  const stopped = status.state === 'error' && maxFailures > 0 && (status.failures ?? 1) >= maxFailures && !byOwner;
  if (!stopped) return { status, stopped };
  const error = `${status.error ?? 'discovery failed'} (re-probing stopped after ${status.failures ?? maxFailures} failures in a row: refresh the server to try again)`;
  return { status: { ...status, error }, stopped };
}

/** A proxy's report as an outcome; a verdict it probed for (already stored) sets the status' era. */
export function observedOutcome(tools: unknown[], transport: Transport, verdict: EraVerdict | undefined): ProbeOutcome {
  const { kept, skipped } = screenTools(sanitizeTools(tools));
  return { tools: kept, transport, skipped, ...(verdict !== undefined ? { verdict } : {}) };
}

/** Whether two statuses agree on what a quiet discovery can change besides the list (era, version, skipped tools). */
export function sameStatusFacts(a: ServerStatus, b: ServerStatus): boolean {
  return (
    a.era === b.era &&
    a.protocolVersion === b.protocolVersion &&
    JSON.stringify(a.skippedTools ?? []) === JSON.stringify(b.skippedTools ?? [])
  );
}

/**
 * A saved server's listing that a store stopped serving midway (Redis: an OAuth token's lock;
 * Postgres: its credentials), as its outcome: the server is saved, so the outage is not the set's
 * to report as "not run" (any other failure is thrown on).
 */
export function storeLostOutcome(err: unknown): ProbeOutcome {
  const store = isRedisUnavailable(err) ? 'redis' : isPostgresUnavailable(err) ? 'postgres' : undefined;
  if (store === undefined) throw err;
  return { error: `${store} was unavailable during the discovery; it is tried again`, code: 'unavailable' };
}

/**
 * The status a set answers with when Postgres refused its discovery's record: a failure, as a
 * recorded one would read (nothing of it is stored; the discovery is run again until it records).
 */
export function unrecordedStatus(server: McpServerRecord, now: Date): ServerStatus {
  const outcome = { error: 'postgres was unavailable while the discovery was recorded; it is tried again' };
  return statusAfter(server, outcome, now, false).status;
}
