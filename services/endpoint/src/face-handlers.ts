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

  get(key: string, account: string, agent: string, server: (clientId: string | undefined) => Server): McpHttpHandler {
    const hit = this.entries.get(key);
    if (hit !== undefined) return hit.handler;
    const handler = createMcpHandler(({ authInfo }) => server(authInfo?.clientId), {
      legacy: 'stateless',
      onerror: (err) => this.onError(err),
    });
    const unwatch = this.toolSets.watch(account, agent, () => handler.notify.toolsChanged());
    this.entries.set(key, { handler, unwatch });
    if (this.entries.size > this.max) {
      const [oldKey, old] = this.entries.entries().next().value as [string, Entry];
      this.entries.delete(oldKey);
      old.unwatch();
      void old.handler.close();
    }
    return handler;
  }

  async close(): Promise<void> {
    const all = [...this.entries.values()];
    this.entries.clear();
    for (const h of all) h.unwatch();
    await Promise.all(all.map((h) => h.handler.close().catch(() => undefined)));
  }
}
