import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { listen, subjectOnly } from '@mcpx/bus';
import type { CallbackLog, Subjects } from '@mcpx/contracts';
import { CredentialReader, readAgent, readToolDocument, type ProxyReads, type ServerCredentials } from '@mcpx/stored';
import { compileValidator, type ArgumentValidator, type McpToolDocument } from '@mcpx/domain';
import { createLogger } from '@mcpx/log';
import type { SecretBox } from '@mcpx/secrets';
import { loadServerLevels, type ServerLevels } from './tool-levels.js';

export interface AgentEntry {
  /** The grant: `definition.mcpServers` as the registry holds it (the authority). */
  grants: Set<string>;
  /** The projection: name → cid (a cache of the grant, never the authority). */
  tools: Map<string, string>;
  /** `definition.inputs.forms === 'runtime'`: the agent's runtime may answer its servers' form elicitations. */
  formsByRuntime?: boolean;
}

export interface DocumentEntry {
  doc: McpToolDocument;
  validate: ArgumentValidator;
}

/** A projected document as read, with the last entry composed from it (keyed by the levels it used). */
interface ProjectedDocument extends DocumentEntry {
  composed?: { levels: ServerLevels; entry: DocumentEntry | null };
}

/**
 * What a call needs to know, read from the owners' tables (the one hot-path exception to "reads
 * go through the owner") and cached in memory. The cache is invalidated by the events that
 * change it: agent-tools-changed and agent-changed for an agent, server events for a server.
 * Documents are keyed by CID, which is their version, so they never go stale.
 *
 * Authority stays with the owner's data: the grant is the agent's definition, and a document's
 * permission level is the registry's (the server's listed tools and the owner's overrides, see
 * ./tool-levels.ts), never the level the projection wrote. An event — even a forged one — can
 * only make the catalog read those rows again.
 */
export class Catalog {
  private readonly agents = new Memo<AgentEntry>();
  private readonly documents = new Memo<ProjectedDocument>();
  private readonly servers = new Memo<ServerCredentials>();
  private readonly levels = new Memo<ServerLevels>();
  private readonly subs: Subscription[] = [];
  /** Invalidations seen (tests and stats read it to know an event has been applied). */
  invalidations = 0;
  /** Server credentials, read as the registry's discovery reads them (`@mcpx/stored`). */
  private readonly credentials: CredentialReader;

  constructor(
    /** The owners' tables the proxy may read (`ProxyReadModel`), select only. */
    private readonly db: ProxyReads,
    box: SecretBox,
    /** The operator's built-in endpoint overrides (`BUILTIN_ENDPOINTS`). */
    builtinEndpoints: Readonly<Record<string, string>> = {},
  ) {
    this.credentials = new CredentialReader(db, box, builtinEndpoints);
  }

  /** The catalog's connection to the owners' tables, for reads beside its own (the held-tools look-up of a refused call). */
  get database(): ProxyReads {
    return this.db;
  }

  /**
   * Subscribes to the invalidating events (core NATS: every instance sees every event). Only the
   * subject is read, by its parser (`Subjects.parseAgentChanged` and the others), never the
   * payload: any message there, its payload well formed or not, just makes the catalog read the
   * owner's rows again (a subject that does not parse names nothing). The callbacks are guarded, so
   * nothing can close the connection from here; a failed subscription is logged to `log`.
   */
  listen(
    nc: NatsConnection,
    subjects: Subjects,
    log: CallbackLog = createLogger('proxy', { fields: { part: 'catalog' } }),
  ): void {
    const dropAgent = (agent: { account: string; agent: string } | null): void => {
      if (agent === null) return;
      this.agents.delete(`${agent.account}:${agent.agent}`);
      this.invalidations++;
    };
    const dropServer = (server: { account: string; server: string } | null): void => {
      if (server === null) return;
      const key = `${server.account}:${server.server}`;
      this.servers.delete(key);
      this.levels.delete(key);
      this.invalidations++;
    };
    this.subs.push(
      listen(nc, subjects.agentToolsChangedAll(), subjectOnly(subjects.parseAgentToolsChanged), dropAgent, {
        what: 'agent-tools-changed invalidation',
        log,
      }),
      listen(nc, subjects.agentChangedAll, subjectOnly(subjects.parseAgentChanged), dropAgent, {
        what: 'agent-changed invalidation',
        log,
      }),
      listen(nc, subjects.serverEventsAll, subjectOnly(subjects.parseServerEvent), dropServer, {
        what: 'server invalidation',
        log,
      }),
    );
  }

  close(): void {
    for (const s of this.subs) s.unsubscribe();
  }

  /** The cached entry of an agent, if it is warm (no I/O). */
  agentNow(account: string, agent: string): AgentEntry | undefined {
    return this.agents.now(`${account}:${agent}`);
  }

  /** The document as a call sees it, if both it and its server's levels are warm (no I/O). */
  documentNow(account: string, cid: string): DocumentEntry | undefined {
    const projected = this.documents.now(`${account}:${cid}`);
    if (projected === undefined) return undefined;
    const levels = this.levels.now(`${account}:${projected.doc.server}`);
    return levels === undefined ? undefined : (withLevel(projected, levels) ?? undefined);
  }

  serverNow(account: string, name: string): ServerCredentials | undefined {
    return this.servers.now(`${account}:${name}`);
  }

  /** The agent's grant and projection; null when the account has no such agent (not cached). */
  agent(account: string, agent: string): Promise<AgentEntry | null> {
    return this.agents.get(`${account}:${agent}`, () => this.loadAgent(account, agent));
  }

  /**
   * The projected document (its contract) with the permission level the registry's records give
   * its tool. Null when there is no such document, or the registry lists no such tool of the
   * server (a stale or forged projection is not callable).
   */
  async document(account: string, cid: string): Promise<DocumentEntry | null> {
    const projected = await this.documents.get(`${account}:${cid}`, () => this.loadDocument(account, cid));
    if (projected === null) return null;
    const key = `${account}:${projected.doc.server}`;
    const levels = await this.levels.get(key, () => loadServerLevels(this.db, account, projected.doc.server));
    return levels === null ? null : withLevel(projected, levels);
  }

  server(account: string, name: string): Promise<ServerCredentials | null> {
    return this.servers.get(`${account}:${name}`, () => this.loadServer(account, name));
  }

  private async loadAgent(account: string, agent: string): Promise<AgentEntry | null> {
    const rows = await readAgent(this.db, account, agent);
    if (rows === null) return null;
    return {
      grants: new Set(rows.definition.mcpServers),
      tools: new Map(Object.entries(rows.tools)),
      ...(rows.definition.inputs?.forms === 'runtime' ? { formsByRuntime: true } : {}),
    };
  }

  private async loadDocument(account: string, cid: string): Promise<ProjectedDocument | null> {
    const doc = await readToolDocument(this.db, account, cid);
    return doc === null ? null : { doc, validate: compileValidator(doc.inputSchema) };
  }

  /** A custom server's row by name, else a built-in lit by a vendor connection (see `CredentialReader.byName`). */
  private loadServer(account: string, name: string): Promise<ServerCredentials | null> {
    return this.credentials.byName(account, name);
  }

  /** Forgets a server's cached entry (its OAuth token was just refreshed). */
  dropServer(account: string, name: string): void {
    this.servers.delete(`${account}:${name}`);
  }
}

/**
 * `projected` with the level `levels` give its remote tool (the same entry when they agree); null
 * when the registry lists no such tool. Composed once per (document, levels) pair.
 */
function withLevel(projected: ProjectedDocument, levels: ServerLevels): DocumentEntry | null {
  if (projected.composed?.levels === levels) return projected.composed.entry;
  const permission = levels.byTool.get(projected.doc.remoteName);
  const entry =
    permission === undefined
      ? null
      : permission === projected.doc.permission
        ? projected
        : { doc: { ...projected.doc, permission }, validate: projected.validate };
  projected.composed = { levels, entry };
  return entry;
}

/** Entries kept at most (the oldest goes first). */
const MEMO_MAX = 100_000;

/**
 * Loads by key: concurrent misses share one read, and the settled value is kept for synchronous
 * reads (no await when warm). A failed read and a null (missing) one are not kept. A load that an
 * invalidation overtook does not store its (possibly stale) value. The load's promise is let go
 * once it settles: a promise keeps the async context it was made in (the first caller's trace
 * context and span), which a kept entry must not pin for its life.
 */
class Memo<T> {
  private readonly slots = new Map<string, { promise: Promise<T | null> | undefined; value: T | undefined }>();

  now(key: string): T | undefined {
    return this.slots.get(key)?.value;
  }

  get(key: string, load: () => Promise<T | null>): Promise<T | null> {
    const hit = this.slots.get(key);
    if (hit?.value !== undefined) return Promise.resolve(hit.value);
    if (hit?.promise !== undefined) return hit.promise;
    const slot: { promise: Promise<T | null> | undefined; value: T | undefined } = {
      promise: undefined,
      value: undefined,
    };
    slot.promise = load().then(
      (v) => {
        if (this.slots.get(key) !== slot) return v;
        if (v === null) this.slots.delete(key);
        else slot.value = v;
        slot.promise = undefined;
        return v;
      },
      (err: unknown) => {
        if (this.slots.get(key) === slot) this.slots.delete(key);
        throw err;
      },
    );
    this.slots.set(key, slot);
    if (this.slots.size > MEMO_MAX) this.slots.delete(this.slots.keys().next().value as string);
    return slot.promise;
  }

  delete(key: string): void {
    this.slots.delete(key);
  }
}
