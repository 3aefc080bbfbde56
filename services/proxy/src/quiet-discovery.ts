import { createHash } from 'node:crypto';
import type { ToolsObserved } from '@mcpx/contracts';
import type { Logger } from '@mcpx/log';
import type { McpConnection } from '@mcpx/mcp-client';
import { traceCarrier, type Context } from '@mcpx/telemetry';
import type { VerdictReport } from './connection-pool.js';

/** How long the same list of one server is not sent again (unless it carries a verdict). */
const SAME_LIST_QUIET_MS = 30_000;
/** Servers whose last list is remembered (the oldest goes first). */
const MAX_REMEMBERED = 10_000;

/**
 * Quiet discovery: every connection's opening lists tools for the registry
 * (`mcp.proxy.tools.observed`). The same list seen again within a short while is not sent again,
 * unless it carries a verdict the connection had to probe for: the registry stores that, so every
 * other instance connects with no probe.
 */
export class QuietDiscovery {
  private readonly last = new Map<string, { hash: string; at: number }>();

  constructor(
    private readonly publish: (msg: ToolsObserved) => void,
    private readonly log: Logger,
  ) {}

  /**
   * Lists `conn`'s tools and reports them, unless the same list went out a moment ago. The listing
   * carries `ctx`'s trace context when given (passed by hand: docs/operations.md#trace-context).
   */
  observe(account: string, server: string, conn: McpConnection, report?: VerdictReport, ctx?: Context): void {
    conn
      .listTools(ctx === undefined ? {} : { trace: traceCarrier(ctx) })
      .then((tools) => {
        const key = `${account}:${server}`;
        const hash = createHash('sha256').update(JSON.stringify(tools)).digest('hex');
        const last = this.last.get(key);
        if (report === undefined && last && last.hash === hash && Date.now() - last.at < SAME_LIST_QUIET_MS) return;
        this.last.set(key, { hash, at: Date.now() });
        if (this.last.size > MAX_REMEMBERED) this.last.delete(this.last.keys().next().value as string);
        this.publish({ account, server, tools, transport: conn.transport, ...(report ?? {}) });
      })
      .catch((err: unknown) => this.log.warn('quiet discovery list failed', { account, server, err: err as Error }));
  }

  /** The server said its tools changed, or its verdict did: the next list goes out whatever it holds. */
  renew(account: string, server: string, conn: McpConnection, report?: VerdictReport): void {
    this.last.delete(`${account}:${server}`);
    this.observe(account, server, conn, report);
  }
}
