import type { Counter, Histogram, Meter } from '@opentelemetry/api';
import { ERROR_TRAITS, type CallOutcome, type ErrorCode } from '@mcpx/contracts';
import { McpAttributes } from '@mcpx/telemetry';

/**
 * How many label values one proxy instance mints, at most. Server names and tool names come from
 * the registry's validated documents (never from the request: an unknown agent, tool or server is
 * `unknown`), and a server's tools are bounded by discovery (`maxTools`); these caps bound the
 * product across accounts too: past them a new server is counted as `other`, a new tool of a known
 * server as `other`. The series of the duration histogram are at most
 * `servers x toolsTotal x 4 outcomes`, those of the error counter `servers x codes`.
 */
export const CALL_LABEL_LIMITS = { servers: 200, toolsTotal: 1_000 } as const;

/** A call's outcome, by what it says about the remote server (bounded: four values; defined in `@mcpx/contracts`). */
export type { CallOutcome };

/**
 * `ok`; `refused`: nothing ran (invalid arguments, not granted, a rate limit, a down server…);
 * `error`: the server ran it and answered an error; `lost`: it may have run, the answer is lost.
 */
export function outcomeOf(code: string): CallOutcome {
  if (code === 'ok') return 'ok';
  const traits = ERROR_TRAITS[code as ErrorCode] as (typeof ERROR_TRAITS)[ErrorCode] | undefined;
  if (traits === undefined) return 'refused';
  return traits.ran === 'ran' ? 'error' : traits.ran === 'maybe' ? 'lost' : 'refused';
}

/** Where a call went, once the proxy knows it (its tool document). */
export interface CallTarget {
  server?: string;
  tool?: string;
  /** The era of the connection the call went out on (the call log keeps it). */
  era?: 'modern' | 'legacy';
}

/**
 * The call path's metrics: `mcpx_call_duration_ms{mcpx_server, gen_ai_tool_name,
 * outcome}` (p50/p99 per server on the dashboard) and `mcpx_call_errors_total{code, mcpx_server}`.
 * Rate-limit and quota refusals are `mcpx_quota_rejections_total{kind}` where they are decided.
 * `mcpx_call_validation_total{mcpx_server, kind}` counts calls whose arguments got a default
 * filled (`default_filled`) or had a part past the validator's bounds let through (`unchecked`).
 */
export class CallMetrics {
  private readonly duration: Histogram;
  private readonly errors: Counter;
  private readonly validation: Counter;
  private readonly servers = new Set<string>();
  private readonly tools = new Set<string>();

  constructor(meter: Meter) {
    this.duration = meter.createHistogram('mcpx_call_duration_ms', {
      unit: 'ms',
      description: 'Call time in the proxy, by server, tool and outcome (ok, refused, error, lost)',
    });
    this.errors = meter.createCounter('mcpx_call_errors_total', {
      description: 'Failed calls by error code and server',
    });
    this.validation = meter.createCounter('mcpx_call_validation_total', {
      description:
        'Calls whose arguments got a default filled (default_filled) or had a part past the validator bounds let through (unchecked), by server',
    });
  }

  /** A validation that filled a default or left a part unchecked (nothing is counted for a plain pass). */
  validated(target: CallTarget, check: { filled?: unknown; partial?: string }): void {
    if (check.filled === undefined && check.partial === undefined) return;
    const { server } = this.labels(target);
    if (check.filled !== undefined) this.validation.add(1, { [McpAttributes.server]: server, kind: 'default_filled' });
    if (check.partial !== undefined) this.validation.add(1, { [McpAttributes.server]: server, kind: 'unchecked' });
  }

  /** The label values of a call's target within {@link CALL_LABEL_LIMITS}. */
  labels(target: CallTarget): { server: string; tool: string } {
    if (target.server === undefined) return { server: 'unknown', tool: 'unknown' };
    const server = target.server;
    if (!this.servers.has(server)) {
      if (this.servers.size >= CALL_LABEL_LIMITS.servers) return { server: 'other', tool: 'other' };
      this.servers.add(server);
    }
    if (target.tool === undefined) return { server, tool: 'unknown' };
    const key = `${server}\u0000${target.tool}`;
    if (!this.tools.has(key)) {
      if (this.tools.size >= CALL_LABEL_LIMITS.toolsTotal) return { server, tool: 'other' };
      this.tools.add(key);
    }
    return { server, tool: target.tool };
  }

  record(target: CallTarget, code: string, ms: number): void {
    const { server, tool } = this.labels(target);
    this.duration.record(ms, {
      [McpAttributes.server]: server,
      [McpAttributes.toolName]: tool,
      outcome: outcomeOf(code),
    });
    if (code !== 'ok') this.errors.add(1, { code, [McpAttributes.server]: server });
  }
}
