import { createHash } from 'node:crypto';
import { ROOT_CONTEXT, SpanKind, trace, type Counter, type Meter, type Tracer } from '@opentelemetry/api';
import type { ToolsObserved } from '@mcpx/contracts';
import type { Logger } from '@mcpx/log';
import type { McpConnection } from '@mcpx/mcp-client';
import { McpAttributes, endWithOutcome, traceCarrier, type Context } from '@mcpx/telemetry';
import type { VerdictReport } from './connection-pool.js';
import { markResponseCut, toWire } from './wire-errors.js';

/** How long the same list of one server is not sent again (unless it carries a verdict). */
const SAME_LIST_QUIET_MS = 30_000;
/** Servers whose last list is remembered (the oldest goes first). */
const MAX_REMEMBERED = 10_000;

/** What became of one quiet listing (`mcpx_proxy_tools_observed_total{outcome}`, the span's `mcpx.outcome`). */
export type ObservedOutcome = 'published' | 'unchanged' | 'failed';

/**
 * Quiet discovery: every connection's opening lists tools for the registry
 * (`mcp.proxy.tools.observed`). The same list seen again within a short while is not sent again,
 * unless it carries a verdict the connection had to probe for: the registry stores that, so every
 * other instance connects with no probe.
 *
 * Each listing is a span, `proxy.tools.observe` (a child of the opening call's context when it has
 * one, else a trace of its own: a server's list change), whose context the listing carries to the
 * server; a listing cut by a bound gets the `outbound.response_cut` event. Each is counted by
 * outcome: `mcpx_proxy_tools_observed_total{outcome=published|unchanged|failed}`.
 */
export class QuietDiscovery {
  private readonly last = new Map<string, { hash: string; at: number }>();
  private readonly observed: Counter | undefined;

  constructor(
    private readonly publish: (msg: ToolsObserved) => void,
    private readonly log: Logger,
    private readonly telemetry: { tracer?: Tracer; meter?: Meter } = {},
  ) {
    this.observed = telemetry.meter?.createCounter('mcpx_proxy_tools_observed_total', {
      description: "Tool listings of connections' openings and list changes, by outcome (published, unchanged, failed)",
    });
  }

  /**
   * Lists `conn`'s tools and reports them, unless the same list went out a moment ago. The listing
   * carries `ctx`'s trace context when given (passed by hand: docs/operations.md#trace-context).
   */
  observe(account: string, server: string, conn: McpConnection, report?: VerdictReport, ctx?: Context): void {
    const span = this.telemetry.tracer?.startSpan(
      'proxy.tools.observe',
      { kind: SpanKind.CLIENT, attributes: { [McpAttributes.server]: server, 'mcpx.transport': conn.transport } },
      ctx ?? ROOT_CONTEXT,
    );
    const parent = span === undefined ? ctx : trace.setSpan(ctx ?? ROOT_CONTEXT, span);
    const done = (outcome: ObservedOutcome, code?: string): void => {
      this.observed?.add(1, { outcome });
      if (span !== undefined) endWithOutcome(span, code, outcome);
    };
    conn
      .listTools(parent === undefined ? {} : { trace: traceCarrier(parent) })
      .then((tools) => {
        span?.setAttribute('mcpx.tools.count', tools.length);
        const key = `${account}:${server}`;
        const hash = createHash('sha256').update(JSON.stringify(tools)).digest('hex');
        const last = this.last.get(key);
        if (report === undefined && last && last.hash === hash && Date.now() - last.at < SAME_LIST_QUIET_MS)
          return done('unchanged');
        this.last.set(key, { hash, at: Date.now() });
        if (this.last.size > MAX_REMEMBERED) this.last.delete(this.last.keys().next().value as string);
        this.publish({ account, server, tools, transport: conn.transport, ...(report ?? {}) });
        done('published');
      })
      .catch((err: unknown) => {
        if (span !== undefined) markResponseCut(span, err);
        done('failed', toWire(err).code);
        this.log.warn('quiet discovery list failed', { account, server, err: err as Error });
      });
  }

  /** The server said its tools changed, or its verdict did: the next list goes out whatever it holds. */
  renew(account: string, server: string, conn: McpConnection, report?: VerdictReport): void {
    this.last.delete(`${account}:${server}`);
    this.observe(account, server, conn, report);
  }
}
