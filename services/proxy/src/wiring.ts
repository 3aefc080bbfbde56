// The proxy's floors, built from its configuration: what `startProxy` puts together on one screen.
import type { Redis } from 'ioredis';
import type { Bus } from '@mcpx/bus';
import type { Config } from '@mcpx/config';
import type { ProxyReads } from '@mcpx/stored';
import { ApprovalStore, CallLimiter, InputStore, connectLimitsRedis } from '@mcpx/shared-state';
import type { Logger } from '@mcpx/log';
import { CONNECTOR_CAPABILITIES, type ElicitRequestParams, type McpConnection } from '@mcpx/mcp-client';
import type { OutboundFetch } from '@mcpx/outbound';
import { SecretBox } from '@mcpx/secrets';
import { traceCarrier, tracingFetch, tracingRequest, type Telemetry } from '@mcpx/telemetry';
import { ApprovalGate } from './approval-gate.js';
import { ConnectionPool } from './connection-pool.js';
import { StoredEraVerdicts } from './era-verdicts.js';
import { InputGate } from './input-requests.js';
import type { LegacyAsks } from './legacy-inputs.js';
import { QuietDiscovery } from './quiet-discovery.js';
import { registerWaitingGauges } from './waiting-gauges.js';

/** A failing limiter is reported at most this often (it admits calls meanwhile). */
const LIMITER_WARNING_EVERY_MS = 10_000;

/**
 * Redis for the per-server limits, approvals and input requests. Admission must not queue behind
 * a Redis outage: commands fail fast (the limits fail open, approvals closed).
 */
export function connectRedis(config: Config, log: Logger): Promise<Redis> {
  return connectLimitsRedis(config.redisUrl, (err) =>
    log.warn('redis unavailable: per-server limits fail open until it answers', { err }),
  );
}

/** The Redis-shared per-server limits; while Redis fails they admit calls, saying so now and then. */
export function callLimiter(redis: Redis, config: Config, log: Logger): CallLimiter {
  let lastWarning = 0;
  return new CallLimiter(redis, config.redisPrefix, {
    onError: (err) => {
      if (Date.now() - lastWarning < LIMITER_WARNING_EVERY_MS) return;
      lastWarning = Date.now();
      log.warn('per-server limits unavailable, admitting calls', { err });
    },
  });
}

/**
 * The connections to remote servers: per run (legacy sessions) or shared (modern), each opening
 * reported by quiet discovery, a legacy server's pushed questions held by `legacyAsks`.
 */
export function connectionPool(
  d: {
    config: Config;
    db: ProxyReads;
    bus: Bus;
    log: Logger;
    telemetry: Telemetry;
    outboundFetch: OutboundFetch;
    idleMs: number;
  },
  legacyAsks: LegacyAsks,
): ConnectionPool {
  const quiet = new QuietDiscovery((msg) => d.bus.notify(d.bus.subjects.toolsObserved, msg), d.log, d.telemetry);
  return new ConnectionPool(
    {
      connectTimeoutMs: 30_000,
      idleMs: d.idleMs,
      tracer: d.telemetry.tracer,
      fetch: tracingFetch(d.outboundFetch),
      // Legacy direct calls take undici's request path (no WHATWG layer), traced like the fetch.
      request: tracingRequest(d.outboundFetch.request),
      traceCarrier,
      // What the connector answers mid-call: a person or the runtime answers elicitations, the
      // runtime samples (a call whose runtime does not is refused, saying so); roots are not shared.
      // Discovery declares the same, so both see the same tools.
      capabilities: CONNECTOR_CAPABILITIES,
      verdicts: new StoredEraVerdicts(d.db),
      // Per instance: a runtime's proxy client routes a refused new run to another instance.
      maxRuns: d.config.quotas.runsPerProxy,
      maxConnections: d.config.quotas.connectionsPerProxy,
      // A brokered task's legacy session holds the task: it outlives this instance (docs/tasks.md).
      keepOnClose: (run) => run.startsWith('task-'),
    },
    {
      // A verdict the opening had to probe for goes with its list: the registry stores it for every instance.
      onOpen: (a, s, c, r, ctx) => quiet.observe(a, s, c, r, ctx),
      onToolsChanged: (a, s, c) => quiet.renew(a, s, c),
      onVerdict: (a, s, c, r) => quiet.renew(a, s, c, r),
      ...(d.config.proxy.legacyElicitation === false
        ? {}
        : {
            onElicitation: (conn: McpConnection | undefined, params: ElicitRequestParams, signal: AbortSignal) =>
              legacyAsks.onElicitation(conn, params, signal),
          }),
      // A legacy server's pushed sampling goes to a runtime that samples (else the call fails, saying so).
      onSampling: (conn, params, signal) => legacyAsks.onSampling(conn, params, signal),
    },
    d.telemetry.meter,
  );
}

/**
 * What stops a call for someone: always_ask calls for a human's approval, servers' questions
 * (input_required) for a person or the runtime. Both live in Redis, shared with the registry, and
 * fail closed on a Redis outage (such a call is refused, never run unasked); a server's
 * requestState is sealed with the deployment's key ring.
 */
export function callGates(d: { config: Config; bus: Bus; redis: Redis; log: Logger; telemetry: Telemetry }): {
  approvals: ApprovalGate;
  inputs: InputGate;
} {
  const { config, bus, telemetry } = d;
  const approvalStore = new ApprovalStore(d.redis, config.redisPrefix, { ttlMs: config.approvalTtlMs });
  const box = new SecretBox(config.keyring);
  // A person's answers are sealed by the registry with the same key ring and opened here.
  const inputStore = new InputStore(d.redis, config.redisPrefix, { box, ttlMs: config.approvalTtlMs });
  registerWaitingGauges(telemetry.meter, { approvals: approvalStore, inputs: inputStore }, d.log);
  const approvals = new ApprovalGate({
    store: approvalStore,
    notify: (subject, event) => bus.notify(subject, event),
    subject: (account) => bus.subjects.approvalRequested(account),
    maxPendingPerAgent: config.quotas.pendingApprovalsPerAgent,
    maxPendingPerAccount: config.quotas.pendingApprovalsPerAccount,
    maxPendingBytesPerAccount: config.quotas.pendingApprovalBytesPerAccount,
    maxPendingGlobal: config.quotas.pendingApprovalsTotal,
    maxPendingBytesGlobal: config.quotas.pendingApprovalBytesTotal,
    meter: telemetry.meter,
    log: d.log,
  });
  const inputs = new InputGate({
    store: inputStore,
    box,
    notify: (subject, event) => bus.notify(subject, event),
    subject: (account) => bus.subjects.inputRequested(account),
    maxPendingPerAgent: config.quotas.pendingApprovalsPerAgent,
    maxPendingPerAccount: config.quotas.pendingInputsPerAccount,
    maxPendingBytesPerAccount: config.quotas.pendingInputBytesPerAccount,
    maxPendingGlobal: config.quotas.pendingInputsTotal,
    maxPendingBytesGlobal: config.quotas.pendingInputBytesTotal,
    meter: telemetry.meter,
  });
  return { approvals, inputs };
}
