import { randomUUID } from 'node:crypto';
import type { ServerDeletedEvent, ServerDiscoveredEvent, Subjects } from '@mcpx/contracts';
import type { Permission } from '@mcpx/domain';
import type { McpServerRecord } from './mcp-servers.repository.js';
import type { OutboxEvent } from '../events/outbox.js';

/**
 * The registry's JetStream events of servers (`mcp.events.server.*`; an agent's are in
 * agents/agent-events.ts), each built once with its subject and message id, for the outbox to
 * write with the commit of its change. The message id is what JetStream
 * de-duplicates on: an outbox row published twice (a crash after the publish, before the row's
 * delete) is stored once.
 */

/** The `server.discovered` payload of a saved record; per-tool permission overrides and withheld tools ride along when set. */
export function serverDiscoveredPayload(
  saved: McpServerRecord,
  toolsChanged: boolean,
  overrides?: Record<string, Permission>,
): ServerDiscoveredEvent {
  const held = (saved.status.heldTools ?? []).filter((h) => h.withheld).map((h) => ({ name: h.name, cid: h.cid }));
  return {
    account: saved.accountId,
    server: saved.name,
    serverId: saved.id,
    generation: saved.generation,
    tools: saved.tools,
    status: saved.status,
    toolsChanged,
    ...(overrides !== undefined && Object.keys(overrides).length > 0 ? { overrides } : {}),
    ...(held.length > 0 ? { held } : {}),
  };
}

/**
 * `mcp.events.server.discovered.<acct>.<server>` of a saved record (a discovery, a permission
 * change, a review decision, a vendor connection). Each commit is an event of its own, so its id
 * is the server's id, generation and a fresh UUID: unique per recorded event, the same for every
 * publish of that one row.
 */
export function serverDiscovered(
  subjects: Subjects,
  saved: McpServerRecord,
  toolsChanged: boolean,
  overrides?: Record<string, Permission>,
): OutboxEvent {
  return {
    subject: subjects.serverDiscovered(saved.accountId, saved.name),
    payload: serverDiscoveredPayload(saved, toolsChanged, overrides),
    msgId: `discovered-${saved.id}-${saved.generation}-${randomUUID()}`,
  };
}

/** `mcp.events.server.deleted.<acct>.<server>`: a server (or a built-in's incarnation) is gone; its id is the id of what went. */
export function serverDeleted(subjects: Subjects, account: string, server: string, serverId: string): OutboxEvent {
  const payload: ServerDeletedEvent = { account, server, serverId };
  return { subject: subjects.serverDeleted(account, server), payload, msgId: `deleted-${serverId}` };
}
