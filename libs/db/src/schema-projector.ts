import type { ColumnType, Generated } from 'kysely';
import type { Timestamp } from './timestamp.js';

/** projector schema: owned by the projector service. */
export interface ToolDocumentsTable {
  account_id: string;
  server: string;
  server_id: string;
  name: string;
  kind: string;
  cid: string;
  doc_cbor: Uint8Array;
  /** The tool's name on its server, as text for search (NULL on rows written before search existed). */
  remote_name: ColumnType<string | null, string | null | undefined, string | null>;
  /** The document's description, as text for search (NULL on rows written before search existed). */
  description: ColumnType<string | null, string | null | undefined, string | null>;
  /** Generated from remote_name, description and server (never written); see the search migration. */
  search: ColumnType<string, never, never>;
}

export interface ProjectedServersTable {
  account_id: string;
  server: string;
  server_id: string;
  generation: number;
  /** name → cid of the server's documents, the unit a sync applies to every granting agent. */
  tools: ColumnType<Record<string, string>, string, string>;
  /** The server was deleted; the row stays (without tools) so late events of it are ignored. */
  deleted: ColumnType<boolean, boolean | undefined, boolean>;
  /** Tools held for review (contract pinning): projected name → `{remoteName, cid}`; in no agent's set. */
  held: ColumnType<Record<string, { remoteName: string; cid: string }>, string | undefined, string>;
}

/** A change of a tool set: the body of agent-tools-changed without its addressing. */
export interface ToolsDiff {
  added: Record<string, string>;
  changed: Record<string, string>;
  removed: string[];
}

/**
 * An agent-tools-changed event kept with the agent while its change is open (crash recovery). The
 * diff is the change's own (open_changes.diff) unless the entry carries one.
 */
export interface PendingToolsEvent extends Partial<ToolsDiff> {
  version: number;
  /** The change (a projection run) that recorded it; see open_changes. */
  change: string;
}

/** Each agent's grant and the version of its tool set (the set is derived: see agent_tools). */
export interface AgentSetsTable {
  account_id: string;
  agent_id: string;
  servers: string[];
  revision: number;
  version: Generated<number>;
  pending: ColumnType<PendingToolsEvent[] | null, string | null | undefined, string | null>;
  updated_at: Timestamp;
}

/**
 * A read-only view: each agent's effective mcp tool set (name → cid) derived from its granted
 * servers' maps, minus names its lambdas hold (listed in `conflicts`). Write agent_sets instead.
 */
export interface AgentToolsTable {
  account_id: string;
  agent_id: string;
  servers: string[];
  revision: number;
  /** name → cid of the agent's effective set. */
  tools: ColumnType<Record<string, string>, string, string>;
  /** [{name, server, heldBy}] names an mcp tool could not take. */
  conflicts: ColumnType<Array<{ name: string; server: string; heldBy: string }>, string, string>;
  version: Generated<number>;
  pending: ColumnType<PendingToolsEvent[] | null, string | null, string | null>;
  updated_at: Timestamp;
}

/** A change whose agent-tools-changed events are not all confirmed published. */
export interface OpenChangesTable {
  id: string;
  account_id: string;
  /** The change's diff, for agents whose pending entry does not carry its own. */
  diff: ColumnType<ToolsDiff | null, string | null | undefined, string | null>;
  created_at: Timestamp;
}

export interface LambdaToolsTable {
  account_id: string;
  agent_id: string;
  name: string;
  cid: string;
  doc_cbor: Uint8Array;
}
