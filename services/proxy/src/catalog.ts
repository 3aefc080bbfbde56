import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { decodePayload, type AgentDefinition, type Subjects } from '@mcpx/contracts';
import type { Db } from '@mcpx/db';
import { compileValidator, type ArgumentValidator, type McpToolDocument } from '@mcpx/domain';
import { secretAad, type SecretBox } from '@mcpx/secrets';

export interface AgentEntry {
  /** The grant: `definition.mcpServers` as the registry holds it (the authority). */
  grants: Set<string>;
  /** The projection: name → cid (a cache of the grant, never the authority). */
  tools: Map<string, string>;
}

export interface DocumentEntry {
  doc: McpToolDocument;
  validate: ArgumentValidator;
}

export interface ServerEntry {
  url: string;
  transport?: 'http' | 'sse';
  headers: Record<string, string>;
}

interface StoredServerConfig {
  url: string;
  transport?: 'http' | 'sse';
  headers?: Record<string, string>;
  secretRefs?: Record<string, string>;
}

/**
 * What a call needs to know, read from the owners' tables (the one hot-path exception to "reads
 * go through the owner") and cached in memory. The cache is invalidated by the events that
 * change it: agent-tools-changed and agent-changed for an agent, server events for a server.
 * Documents are keyed by CID, which is their version, so they never go stale.
 */
export class Catalog {
  private readonly agents = new Map<string, Promise<AgentEntry>>();
  private readonly documents = new Map<string, Promise<DocumentEntry | null>>();
  private readonly servers = new Map<string, Promise<ServerEntry | null>>();
  private readonly subs: Subscription[] = [];

  constructor(
    private readonly db: Db,
    private readonly box: SecretBox,
  ) {}

  /** Subscribes to the invalidating events (core NATS: every instance sees every event). */
  listen(nc: NatsConnection, subjects: Subjects): void {
    const dropAgent = (subject: string): void => {
      const parts = subject.split('.');
      this.agents.delete(`${parts.at(-2)}:${parts.at(-1)}`);
    };
    this.subs.push(
      nc.subscribe(subjects.agentToolsChangedAll(), { callback: (err, msg) => void (err ?? dropAgent(msg.subject)) }),
      nc.subscribe(subjects.agentChangedAll, { callback: (err, msg) => void (err ?? dropAgent(msg.subject)) }),
      nc.subscribe(subjects.serverEventsAll, {
        callback: (err, msg) => {
          if (err) return;
          const parts = msg.subject.split('.');
          this.servers.delete(`${parts.at(-2)}:${parts.at(-1)}`);
        },
      }),
    );
  }

  close(): void {
    for (const s of this.subs) s.unsubscribe();
  }

  agent(account: string, agent: string): Promise<AgentEntry> {
    return this.memo(this.agents, `${account}:${agent}`, () => this.loadAgent(account, agent));
  }

  document(account: string, cid: string): Promise<DocumentEntry | null> {
    return this.memo(this.documents, `${account}:${cid}`, () => this.loadDocument(account, cid), true);
  }

  server(account: string, name: string): Promise<ServerEntry | null> {
    return this.memo(this.servers, `${account}:${name}`, () => this.loadServer(account, name), true);
  }

  /** Caches the promise so concurrent misses share one read; a failed read is not cached. */
  private memo<T>(map: Map<string, Promise<T>>, key: string, load: () => Promise<T>, dropNull = false): Promise<T> {
    const hit = map.get(key);
    if (hit) return hit;
    const p = load().then(
      (v) => {
        if (dropNull && v === null) map.delete(key);
        return v;
      },
      (err: unknown) => {
        map.delete(key);
        throw err;
      },
    );
    map.set(key, p);
    if (map.size > 100_000) map.delete(map.keys().next().value as string);
    return p;
  }

  private async loadAgent(account: string, agent: string): Promise<AgentEntry> {
    const [def, tools] = await Promise.all([
      this.db.selectFrom('registry.agents').select('definition_cbor').where('account_id', '=', account).where('id', '=', agent).executeTakeFirst(),
      this.db.selectFrom('projector.agent_tools').select('tools').where('account_id', '=', account).where('agent_id', '=', agent).executeTakeFirst(),
    ]);
    const definition = def ? decodePayload<AgentDefinition>(def.definition_cbor) : { mcpServers: [] };
    return { grants: new Set(definition.mcpServers ?? []), tools: new Map(Object.entries(tools?.tools ?? {})) };
  }

  private async loadDocument(account: string, cid: string): Promise<DocumentEntry | null> {
    const row = await this.db.selectFrom('projector.tool_documents').select('doc_cbor').where('account_id', '=', account).where('cid', '=', cid).executeTakeFirst();
    if (row === undefined) return null;
    const doc = decodePayload<McpToolDocument>(row.doc_cbor);
    return { doc, validate: compileValidator(doc.inputSchema) };
  }

  private async loadServer(account: string, name: string): Promise<ServerEntry | null> {
    const row = await this.db.selectFrom('registry.mcp_servers').select('config_cbor').where('account_id', '=', account).where('name', '=', name).executeTakeFirst();
    if (row === undefined) return null;
    const config = decodePayload<StoredServerConfig>(row.config_cbor);
    const headers: Record<string, string> = {};
    for (const [h, v] of Object.entries(config.headers ?? {})) headers[h.toLowerCase()] = v;
    const refs = Object.entries(config.secretRefs ?? {});
    if (refs.length > 0) {
      const secrets = await this.db
        .selectFrom('registry.secrets')
        .select(['name', 'key_id', 'ciphertext'])
        .where('account_id', '=', account)
        .where('name', 'in', refs.map(([, r]) => r))
        .execute();
      const byName = new Map(secrets.map((s) => [s.name, s]));
      for (const [header, ref] of refs) {
        const s = byName.get(ref);
        if (s) headers[header.toLowerCase()] = this.box.open({ keyId: s.key_id, ciphertext: s.ciphertext }, secretAad(account, ref));
      }
    }
    return { url: config.url, ...(config.transport ? { transport: config.transport } : {}), headers };
  }
}
