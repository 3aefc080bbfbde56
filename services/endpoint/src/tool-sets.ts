import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { listen, subjectOnly } from '@mcpx/bus';
import type { CallbackLog, Subjects } from '@mcpx/contracts';
import { readAgentToolSet, readToolDocuments, type EndpointReads } from '@mcpx/stored';
import type { McpToolDocument } from '@mcpx/domain';

/** One agent's callable tool set as the endpoint lists it: mcp documents of granted servers, by name. */
export interface AgentToolSet {
  /** The projector's version of the set (changes whenever the set does). */
  version: number;
  /** Sorted by name (the order of `tools/list`, deterministic). */
  tools: McpToolDocument[];
  byName: Map<string, McpToolDocument>;
  /** The servers the agent's grant names (the per-server face serves only these). */
  granted: ReadonlySet<string>;
  /** Each granted server's tools in the set, for its per-server face: sorted by remote name, and by it. */
  byServer: Map<string, ServerTools>;
}

/** One server's tools in an agent's set, under their own (remote) names. */
export interface ServerTools {
  tools: McpToolDocument[];
  byRemote: Map<string, McpToolDocument>;
}

/** The per-server views of a set's tools (each list sorted by remote name). */
function byServer(tools: McpToolDocument[]): Map<string, ServerTools> {
  const out = new Map<string, ServerTools>();
  for (const doc of tools) {
    let s = out.get(doc.server);
    if (s === undefined) out.set(doc.server, (s = { tools: [], byRemote: new Map() }));
    // Two documents of one server under one remote name cannot both be served by it: the first (by merged name) is.
    if (s.byRemote.has(doc.remoteName)) continue;
    s.byRemote.set(doc.remoteName, doc);
    s.tools.push(doc);
  }
  for (const s of out.values())
    s.tools.sort((a, b) => (a.remoteName < b.remoteName ? -1 : a.remoteName > b.remoteName ? 1 : 0));
  return out;
}

/** Sets kept at most (the oldest goes first). */
const MAX_SETS = 20_000;
/**
 * A set is read again after this long even without an event: agents.tools.changed reaches core
 * subscribers at most once, so a lost one costs at most this much staleness, never a stale set for
 * good. (The proxy checks the grant on every call regardless.)
 */
const MAX_AGE_MS = 30_000;

/**
 * The agents' tool sets, read from their owners' rows (the agent's grant in the registry, its
 * projection and documents in the projector: read only, through the {@link EndpointReads} that
 * name those three tables, the hot-path exception the proxy also makes) and kept in memory until `agents.tools.changed.<acct>.<agent>` says the set changed.
 * The grant is applied here too, so a server just revoked is not listed even before the
 * projection catches up; the proxy checks it again on every call.
 */
export class ToolSets {
  private readonly sets = new Map<string, { at: number; set: Promise<AgentToolSet | null>; version?: number }>();
  private readonly watchers = new Map<string, Set<() => void>>();
  private sub: Subscription | undefined;

  constructor(private readonly db: EndpointReads) {}

  /**
   * Listens to `agents.tools.changed.>` (core NATS): any message there drops the agent's set and
   * tells its watchers (open list_changed streams). Only the subject is read.
   */
  listen(nc: NatsConnection, subjects: Subjects, log: CallbackLog): void {
    this.sub = listen(
      nc,
      subjects.agentToolsChangedAll(),
      subjectOnly(subjects.parseAgentToolsChanged),
      (agent) => {
        if (agent !== null) this.changed(`${agent.account}:${agent.agent}`);
      },
      { what: 'agent-tools-changed', log },
    );
  }

  close(): void {
    this.sub?.unsubscribe();
  }

  /** Drops the agent's set and tells its watchers. */
  changed(key: string): void {
    this.sets.delete(key);
    for (const w of this.watchers.get(key) ?? []) w();
  }

  /** Calls `onChange` whenever the agent's set changes; returns the unsubscribe. */
  watch(account: string, agent: string, onChange: () => void): () => void {
    const key = `${account}:${agent}`;
    let set = this.watchers.get(key);
    if (set === undefined) this.watchers.set(key, (set = new Set()));
    set.add(onChange);
    return () => {
      set.delete(onChange);
      if (set.size === 0 && this.watchers.get(key) === set) this.watchers.delete(key);
    };
  }

  /** The agent's set; null when the account has no such agent. */
  get(account: string, agent: string): Promise<AgentToolSet | null> {
    const key = `${account}:${agent}`;
    const hit = this.sets.get(key);
    if (hit !== undefined && Date.now() - hit.at < MAX_AGE_MS) return hit.set;
    const slot: { at: number; set: Promise<AgentToolSet | null>; version?: number } = {
      at: Date.now(),
      set: Promise.resolve(null),
    };
    const before = hit?.version;
    slot.set = this.load(account, agent).then(
      (v) => {
        if (v === null && this.sets.get(key) === slot) this.sets.delete(key);
        if (v !== null) slot.version = v.version;
        // An aged-out set that changed meanwhile: its change event was lost, so tell the watchers now.
        if (v !== null && before !== undefined && v.version !== before)
          for (const w of this.watchers.get(key) ?? []) w();
        return v;
      },
      (err: unknown) => {
        if (this.sets.get(key) === slot) this.sets.delete(key);
        throw err;
      },
    );
    this.sets.delete(key);
    this.sets.set(key, slot);
    if (this.sets.size > MAX_SETS) this.sets.delete(this.sets.keys().next().value as string);
    return slot.set;
  }

  private async load(account: string, agent: string): Promise<AgentToolSet | null> {
    // Read and decoded by the functions and codecs their writers encode with (@mcpx/stored).
    const rows = await readAgentToolSet(this.db, account, agent);
    if (rows === null) return null;
    const grants = new Set(rows.definition.mcpServers);
    const docs =
      grants.size === 0
        ? new Map<string, McpToolDocument>()
        : await readToolDocuments(this.db, account, Object.values(rows.tools));
    const tools: McpToolDocument[] = [];
    for (const [name, cid] of Object.entries(rows.tools)) {
      const doc = docs.get(cid);
      // A lambda's CID has no mcp document: authored tools are not served here.
      if (doc === undefined) continue;
      if (doc.kind !== 'mcp' || doc.name !== name || !grants.has(doc.server)) continue;
      tools.push(doc);
    }
    tools.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return {
      version: rows.version,
      tools,
      byName: new Map(tools.map((t) => [t.name, t])),
      granted: grants,
      byServer: byServer(tools),
    };
  }
}
