import { createMcpHandler, type McpHttpHandler, type Server } from '@modelcontextprotocol/server';
import type { ToolSets } from './tool-sets.js';

interface Entry {
  handler: McpHttpHandler;
  unwatch: () => void;
}

/**
 * The MCP handlers of a face, one per key (an agent, or an agent's server), made on first use:
 * both eras, sessionless; each one's `tools/list_changed` follows its agent's set; past `max`,
 * the oldest is closed.
 */
export class FaceHandlers {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly toolSets: ToolSets,
    private readonly onError: (err: Error) => void,
    private readonly max: number,
  ) {}

  /**
   * The face's handler, made on first use; `wrap` (task-listen.ts) may serve some of its requests
   * beside the SDK's, and is closed with it.
   */
  get(
    key: string,
    account: string,
    agent: string,
    server: (clientId: string | undefined) => Server,
    face?: string,
    wrap?: (handler: McpHttpHandler) => McpHttpHandler,
  ): McpHttpHandler {
    const hit = this.entries.get(key);
    if (hit !== undefined) return hit.handler;
    const sdk = createMcpHandler(({ authInfo }) => server(authInfo?.clientId), {
      legacy: 'stateless',
      onerror: (err) => this.onError(err),
    });
    const handler = wrap?.(sdk) ?? sdk;
    // A per-server face whose server the agent is no longer granted ends: its handler closes, and
    // with it every stream still open on it (a new request is refused at the door).
    const changed = (): void => {
      if (face === undefined) return handler.notify.toolsChanged();
      this.toolSets.get(account, agent).then(
        (set) => {
          if (set !== null && set.granted.has(face)) handler.notify.toolsChanged();
          else this.drop(key, handler);
        },
        () => handler.notify.toolsChanged(),
      );
    };
    const unwatch = this.toolSets.watch(account, agent, changed);
    this.entries.set(key, { handler, unwatch });
    if (this.entries.size > this.max) {
      const [oldKey, old] = this.entries.entries().next().value as [string, Entry];
      this.entries.delete(oldKey);
      old.unwatch();
      void old.handler.close();
    }
    return handler;
  }

  /** Closes `key`'s handler (if it is still `handler`) and its streams. */
  private drop(key: string, handler: McpHttpHandler): void {
    const entry = this.entries.get(key);
    if (entry?.handler !== handler) return;
    this.entries.delete(key);
    entry.unwatch();
    void handler.close().catch(() => undefined);
  }

  async close(): Promise<void> {
    const all = [...this.entries.values()];
    this.entries.clear();
    for (const h of all) h.unwatch();
    await Promise.all(all.map((h) => h.handler.close().catch(() => undefined)));
  }
}
