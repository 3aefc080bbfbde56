import { SpanStatusCode, type Meter, type Span } from '@opentelemetry/api';

/**
 * The attribute names of the MCP and GenAI semantic conventions the spans of discovery, projection
 * and calls carry, in one place so every service spells them alike. Values are
 * names, codes and counts, never an argument value or a secret.
 */
export const McpAttributes = {
  /** `tools/call`, `tools/list`, `initialize`, `server/discover`, `subscriptions/listen`. */
  methodName: 'mcp.method.name',
  /** The legacy session id, where one exists (never on a modern, stateless call). */
  sessionId: 'mcp.session.id',
  /** The remote tool's name. */
  toolName: 'gen_ai.tool.name',
  /** `ok` or the wire error code (`timeout`, `server_error`, …). */
  outcome: 'mcpx.outcome',
  errorCode: 'error.type',
  /** The server's registry name (not its URL). */
  server: 'mcpx.server',
  /** How many agents one projection batch touched. */
  agentsTouched: 'mcpx.projection.agents',
} as const;

/**
 * Ends a step's span with its outcome: `mcpx.outcome` `ok` (or `outcome`), or, given an error
 * `code`, `mcpx.outcome` and `error.type` set to it and the status ERROR (the code is the message:
 * never an error text, which might quote an argument).
 */
export function endWithOutcome(span: Span, code?: string, outcome = 'ok'): void {
  if (code === undefined) span.setAttribute(McpAttributes.outcome, outcome);
  else {
    span.setAttributes({ [McpAttributes.outcome]: code, [McpAttributes.errorCode]: code });
    span.setStatus({ code: SpanStatusCode.ERROR, message: code });
  }
  span.end();
}

/** What a JetStream consumer has not yet finished, as `jsm.consumers.info` reports it. */
export interface ConsumerBacklog {
  /** Messages not yet delivered (`num_pending`). */
  pending: number;
  /** Delivered, not yet acknowledged (`num_ack_pending`). */
  ackPending: number;
}

/**
 * `mcpx_consumer_backlog{consumer,state=pending|ack_pending}`: a durable consumer's lag, read when
 * Prometheus scrapes (e.g. the projector's `projector` consumer of MCP_EVENTS:
 * `consumerBacklogGauge(meter, 'projector', async () => { const i = await jsm.consumers.info(stream, 'projector'); return { pending: i.num_pending, ackPending: i.num_ack_pending }; })`).
 * A failed read reports NaN for that scrape (unknown), never the last value as if it were current.
 */
export function consumerBacklogGauge(meter: Meter, consumer: string, read: () => Promise<ConsumerBacklog>): void {
  const gauge = meter.createObservableGauge('mcpx_consumer_backlog', {
    description:
      'Messages a JetStream consumer has not finished, by state (pending: not yet delivered; ack_pending: delivered, not acked)',
  });
  gauge.addCallback(async (result) => {
    try {
      const b = await read();
      result.observe(b.pending, { consumer, state: 'pending' });
      result.observe(b.ackPending, { consumer, state: 'ack_pending' });
    } catch {
      // The consumer could not be read: unknown, not stale (the SDK would repeat the last value).
      result.observe(Number.NaN, { consumer, state: 'pending' });
      result.observe(Number.NaN, { consumer, state: 'ack_pending' });
    }
  });
}
