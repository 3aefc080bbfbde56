import { SpanKind, type Counter, type Histogram, type Meter, type Tracer } from '@opentelemetry/api';
import { ErrorCodes, WireError, invalidInput, type ProxyCallRequest } from '@mcpx/contracts';
import { flattenCallResult, isErrorResult, type ProxyResult } from '@mcpx/domain';
import { McpClientError, type McpConnection } from '@mcpx/mcp-client';
import { withSpan } from '@mcpx/telemetry';
import type { Catalog } from './catalog.js';
import type { ConnectionPool } from './connection-pool.js';

/** Seed 000: a call may take at most 120 s. */
export const MAX_CALL_TIMEOUT_MS = 120_000;
const ID_RE = /^[A-Za-z0-9_-]{1,128}$/;

function requireId(v: unknown, field: string): string {
  if (typeof v !== 'string' || !ID_RE.test(v)) throw invalidInput(field, 'must be 1-128 letters, digits, _ or -');
  return v;
}

/** Checks the shape of a call request, naming the first bad field. */
export function parseCallRequest(raw: unknown): ProxyCallRequest {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw invalidInput('request', 'must be a map');
  const r = raw as Record<string, unknown>;
  const args = r.arguments ?? {};
  if (args === null || typeof args !== 'object' || Array.isArray(args)) throw invalidInput('arguments', 'must be an object');
  if (r.timeoutMs !== undefined && (typeof r.timeoutMs !== 'number' || !Number.isFinite(r.timeoutMs) || r.timeoutMs <= 0)) {
    throw invalidInput('timeoutMs', 'must be a positive number of milliseconds');
  }
  if (typeof r.tool !== 'string' || r.tool === '' || r.tool.length > 128) throw invalidInput('tool', 'must name a tool');
  return {
    account: requireId(r.account, 'account'),
    agent: requireId(r.agent, 'agent'),
    run: requireId(r.run, 'run'),
    callId: requireId(r.callId, 'callId'),
    tool: r.tool,
    arguments: args as Record<string, unknown>,
    ...(typeof r.timeoutMs === 'number' ? { timeoutMs: r.timeoutMs } : {}),
  };
}

/** Maps the MCP client's local errors onto the wire codes the runtime shows the model. */
function toWire(err: unknown): WireError {
  if (err instanceof WireError) return err;
  if (err instanceof McpClientError) {
    switch (err.code) {
      case 'unauthorized':
        return new WireError(ErrorCodes.authRequired, err.message);
      case 'timeout':
        return new WireError(ErrorCodes.timeout, err.message);
      case 'cancelled':
        return new WireError(ErrorCodes.cancelled, 'the call was cancelled');
      case 'protocol_error':
        return new WireError(ErrorCodes.serverError, err.message, err.mcpCode !== undefined ? { mcpCode: err.mcpCode } : {});
      case 'connect_failed':
      case 'session_expired':
      case 'transport_error':
        return new WireError(ErrorCodes.transportError, err.message);
    }
  }
  return new WireError(ErrorCodes.internal, 'internal error');
}

export interface CallHandlerDeps {
  catalog: Catalog;
  pool: ConnectionPool;
  tracer: Tracer;
  meter: Meter;
}

/**
 * Executes `call` for an mcp tool document: validate the arguments against the contract, check
 * the grant itself, call over the run's pool, flatten the result.
 */
export class CallHandler {
  private readonly inflight = new Map<string, AbortController>();
  private readonly calls: Counter;
  private readonly duration: Histogram;

  constructor(private readonly deps: CallHandlerDeps) {
    this.calls = deps.meter.createCounter('mcpx_proxy_calls_total', { description: 'Calls by result code' });
    this.duration = deps.meter.createHistogram('mcpx_proxy_call_duration_ms', { unit: 'ms', description: 'Call time, end to end in the proxy' });
  }

  get inflightCount(): number {
    return this.inflight.size;
  }

  /** Aborts an in-flight call of a run (`mcp.proxy.cancel`); false when there is none. */
  cancel(account: string, run: string, callId: string): boolean {
    const ctl = this.inflight.get(`${account}:${run}:${callId}`);
    ctl?.abort();
    return ctl !== undefined;
  }

  async handle(raw: unknown): Promise<ProxyResult> {
    const started = performance.now();
    let code = 'ok';
    try {
      const req = parseCallRequest(raw);
      return await withSpan(
        this.deps.tracer,
        'proxy.call',
        { 'mcp.account': req.account, 'mcpx.agent': req.agent, 'mcpx.run': req.run, 'mcp.tool': req.tool },
        () => this.execute(req, started),
        { kind: SpanKind.SERVER },
      );
    } catch (err) {
      const wire = toWire(err);
      code = wire.code;
      throw wire;
    } finally {
      this.calls.add(1, { code });
      this.duration.record(performance.now() - started, { code });
    }
  }

  private async execute(req: ProxyCallRequest, started: number): Promise<ProxyResult> {
    const { catalog } = this.deps;
    const agent = await catalog.agent(req.account, req.agent);
    const cid = agent.tools.get(req.tool);
    if (cid === undefined) throw new WireError(ErrorCodes.notFound, `no tool ${req.tool} is enabled for this agent`, { field: 'tool' });
    const entry = await catalog.document(req.account, cid);
    if (entry === null) throw new WireError(ErrorCodes.notFound, `no tool ${req.tool} is enabled for this agent`, { field: 'tool' });
    const { doc } = entry;
    const check = entry.validate(req.arguments);
    if (!check.ok) {
      // Touch-expand: a miss answers with the real contract, and nothing is called.
      throw new WireError(ErrorCodes.invalidArguments, `arguments do not match ${doc.name}: ${check.errors.map((e) => `${e.path || '/'} ${e.message}`).join('; ')}`, {
        errors: check.errors,
        contract: { name: doc.name, description: doc.description, inputSchema: doc.inputSchema },
      });
    }
    if (!agent.grants.has(doc.server)) throw new WireError(ErrorCodes.notGranted, `the agent is not granted the ${doc.server} MCP server`, { server: doc.server });
    const server = await catalog.server(req.account, doc.server);
    if (server === null) throw new WireError(ErrorCodes.notFound, `no MCP server named ${doc.server}`, { server: doc.server });
    const timeoutMs = Math.min(req.timeoutMs ?? MAX_CALL_TIMEOUT_MS, MAX_CALL_TIMEOUT_MS);
    const key = `${req.account}:${req.run}:${req.callId}`;
    const ctl = new AbortController();
    this.inflight.set(key, ctl);
    try {
      const call = (conn: McpConnection) =>
        withSpan(this.deps.tracer, 'mcp tools/call', { 'mcp.server': doc.server, 'mcp.remote_tool': doc.remoteName }, () =>
          conn.callTool({ name: doc.remoteName, arguments: req.arguments }, { timeoutMs, signal: ctl.signal }), { kind: SpanKind.CLIENT });
      let result;
      try {
        result = await this.deps.pool.use(req.account, req.run, doc.server, server, call);
      } catch (err) {
        // A lost session means the request was not executed: one fresh handshake, one retry.
        if (!(err instanceof McpClientError) || err.code !== 'session_expired') throw err;
        result = await this.deps.pool.use(req.account, req.run, doc.server, server, call, true);
      }
      const errorText = isErrorResult(result);
      if (errorText !== undefined) throw new WireError(ErrorCodes.serverError, errorText || `${doc.name} reported an error`, { server: doc.server });
      return flattenCallResult({
        tool: doc.name,
        server: doc.server,
        remoteName: doc.remoteName,
        arguments: req.arguments,
        result,
        durationMs: Math.round(performance.now() - started),
      });
    } finally {
      this.inflight.delete(key);
    }
  }
}
