import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { listen, subjectOnly } from '@mcpx/bus';
import {
  SpanKind,
  SpanStatusCode,
  trace,
  type Context,
  type Counter,
  type Histogram,
  type Meter,
  type Tracer,
} from '@opentelemetry/api';
import {
  ErrorCodes,
  INPUT_METHODS,
  MAX_RELAY_TIMEOUT_MS,
  QueueGroups,
  WireError,
  decodeRelayRequest,
  resourceUriFault,
  type RelayMethod,
  type RelayReply,
  type RelayRequest,
  type Subjects,
} from '@mcpx/contracts';
import type { Logger } from '@mcpx/log';
import { McpClientError, McpClientErrorCode, type McpConnection } from '@mcpx/mcp-client';
import { McpAttributes, extractTraceContext, spanIds, traceCarrier } from '@mcpx/telemetry';
import type { Catalog } from './catalog.js';
import { grantedServer } from './granted-server.js';
import type { ConnectionPool } from './connection-pool.js';
import type { InputGate } from './input-requests.js';
import { relayWithInputs, type RelaySend } from './relay-inputs.js';
import type { OAuthTokens } from './oauth-tokens.js';
import { markResponseCut, toWire } from './wire-errors.js';
import { takeRequest } from './relay-replies.js';
import { RelayCache, credentialsDigest } from './relay-cache.js';

export { RELAY_CACHE_MAX_TTL_MS, RelayCache } from './relay-cache.js';
import { screenAppContents } from './app-resources.js';

/** Room left in a reply for its envelope and the markers. */
const REPLY_MARGIN_BYTES = 16 * 1024;

/** The capability a server declares for a method, and what a method answers when it declares none. */
const CAPABILITY: Record<RelayMethod, 'resources' | 'prompts' | 'completions'> = {
  'resources/list': 'resources',
  'resources/templates/list': 'resources',
  'resources/read': 'resources',
  'prompts/list': 'prompts',
  'prompts/get': 'prompts',
  'completion/complete': 'completions',
};
/** The list each result carries (bounded item by item). */
const ITEMS: Record<RelayMethod, string> = {
  'resources/list': 'resources',
  'resources/templates/list': 'resourceTemplates',
  'resources/read': 'contents',
  'prompts/list': 'prompts',
  'prompts/get': 'messages',
  'completion/complete': 'completion',
};

/** What a server that declares no such capability is taken to answer (lists are empty, nothing else exists). */
function undeclared(req: RelayRequest): Record<string, unknown> {
  switch (req.method) {
    case 'resources/list':
      return { resources: [] };
    case 'resources/templates/list':
      return { resourceTemplates: [] };
    case 'prompts/list':
      return { prompts: [] };
    case 'completion/complete':
      return { completion: { values: [], hasMore: false } };
    case 'resources/read':
      throw new WireError(ErrorCodes.notFound, `the ${req.server} MCP server has no resources`, {
        field: 'uri',
        server: req.server,
        mcpCode: -32002,
      });
    case 'prompts/get':
      throw new WireError(ErrorCodes.notFound, `the ${req.server} MCP server has no prompts`, {
        field: 'name',
        server: req.server,
        mcpCode: -32602,
      });
  }
}

const byteLength = (v: unknown): number => Buffer.byteLength(JSON.stringify(v) ?? '');

/**
 * A server's result within `maxBytes` of JSON: the listed resources and templates whose URI breaks
 * the URI rule (`..`, `javascript:`, control or bidi characters) are left out, and the items past
 * the bound too (a read's contents and a prompt's messages are replaced by a text that says what
 * and why, so their places stay); `_meta["io.mcpx/omitted"]` counts what was left out and why.
 */
export function boundRelayResult(
  method: RelayMethod,
  result: Record<string, unknown>,
  maxBytes: number,
): Record<string, unknown> {
  const key = ITEMS[method];
  const items = result[key];
  if (!Array.isArray(items)) {
    if (byteLength(result) <= maxBytes) return result;
    throw new WireError(
      ErrorCodes.serverError,
      `the server's ${method} result is larger than the ${maxBytes} bytes a relayed result may be`,
      { limit: maxBytes },
    );
  }
  let unsafe = 0;
  let kept: unknown[] = items;
  if (method === 'resources/list' || method === 'resources/templates/list') {
    kept = items.filter((item) => {
      const uri = (item as { uri?: unknown; uriTemplate?: unknown } | null)?.[
        method === 'resources/list' ? 'uri' : 'uriTemplate'
      ];
      const fault = resourceUriFault(typeof uri === 'string' ? uri.replace(/\{[^{}]{1,64}\}/g, 'x') : uri);
      if (fault !== undefined) unsafe++;
      return fault === undefined;
    });
  }
  const rest = { ...result, [key]: [] };
  let budget = maxBytes - byteLength(rest) - 1_024;
  const out: unknown[] = [];
  let over = 0;
  for (const item of kept) {
    const size = byteLength(item) + 1;
    if (size <= budget) {
      out.push(item);
      budget -= size;
      continue;
    }
    over++;
    const marker = `[mcpx: left out: ${size} bytes, over the ${maxBytes}-byte bound of a relayed result]`;
    if (method === 'resources/read') {
      const c = item as { uri?: unknown; mimeType?: unknown };
      const placed = {
        uri: typeof c.uri === 'string' ? c.uri.slice(0, 2_048) : '',
        ...(typeof c.mimeType === 'string' ? { mimeType: c.mimeType.slice(0, 128) } : {}),
        text: marker,
      };
      budget -= byteLength(placed);
      if (budget > 0) out.push(placed);
    } else if (method === 'prompts/get') {
      const role = (item as { role?: unknown }).role === 'assistant' ? 'assistant' : 'user';
      const placed = { role, content: { type: 'text', text: marker } };
      budget -= byteLength(placed);
      if (budget > 0) out.push(placed);
    }
  }
  if (unsafe === 0 && over === 0) return result;
  const meta =
    typeof result._meta === 'object' && result._meta !== null ? (result._meta as Record<string, unknown>) : {};
  // What an earlier step left out (./app-resources.ts) is counted beside.
  const earlier =
    typeof meta['io.mcpx/omitted'] === 'object' && meta['io.mcpx/omitted'] !== null
      ? (meta['io.mcpx/omitted'] as Record<string, unknown>)
      : {};
  return {
    ...result,
    [key]: out,
    _meta: {
      ...meta,
      'io.mcpx/omitted': {
        ...earlier,
        ...(unsafe > 0 ? { unsafeUris: unsafe } : {}),
        ...(over > 0 ? { overLimit: over, limit: maxBytes } : {}),
      },
    },
  };
}

export interface RelayDeps {
  nc: NatsConnection;
  subjects: Subjects;
  instance: string;
  catalog: Catalog;
  pool: ConnectionPool;
  tracer: Tracer;
  meter: Meter;
  oauth?: OAuthTokens;
  /** The NATS connection's max payload: a reply stays within it. */
  maxPayload: number;
  log: Logger;
  /** Input rounds of a relayed prompt or read (relay-inputs.ts); absent, such a question fails the request. */
  inputs?: InputGate;
}

/** A server's JSON-RPC error as a wire error that keeps its code (`mcpCode`), so a client gets the server's answer. */
function relayError(err: unknown, req: RelayRequest): WireError {
  if (
    err instanceof McpClientError &&
    err.code === McpClientErrorCode.ProtocolError &&
    typeof err.details.mcpCode === 'number'
  ) {
    const mcpCode = err.details.mcpCode;
    const code =
      mcpCode === -32002 ? ErrorCodes.notFound : mcpCode === -32602 ? ErrorCodes.invalidInput : ErrorCodes.serverError;
    return new WireError(code, err.message.slice(0, 1_024), {
      server: req.server,
      mcpCode,
      ...(code === ErrorCodes.invalidInput ? { field: 'params' } : {}),
    });
  }
  return toWire(err);
}

/**
 * `mcp.proxy.relay` (queue group `proxy`): a granted server's resources, resource templates,
 * prompts and completions, over the run's pooled connection (the credentials stay here), each
 * result bounded ({@link boundRelayResult}) and kept by the server's `ttlMs` per account and server.
 * A span (`proxy.relay`) and the metrics `mcpx_proxy_relay_total` (by method and outcome) and
 * `mcpx_proxy_relay_duration_ms` per request. Every request gets a reply; a malformed one a typed
 * `invalid_input` naming the field.
 */
export class RelayRequests {
  private readonly subs: Subscription[] = [];
  private readonly cache = new RelayCache();
  private readonly total: Counter;
  private readonly duration: Histogram;

  constructor(private readonly deps: RelayDeps) {
    this.total = deps.meter.createCounter('mcpx_proxy_relay_total', {
      description: 'Relayed resources, prompts and completions requests, by method and outcome',
    });
    this.duration = deps.meter.createHistogram('mcpx_proxy_relay_duration_ms', {
      unit: 'ms',
      description: 'Relayed requests, end to end in the proxy',
    });
  }

  start(): void {
    const { nc, subjects, instance, log } = this.deps;
    const refused = (): void => void this.total.add(1, { method: 'unknown', outcome: ErrorCodes.invalidInput });
    // A server's configuration or credentials changed (its events: saved and discovered, deleted):
    // what was kept of it goes (the key's credentials digest already keeps a new reading apart).
    const forget = (e: { account: string; server: string } | null): void => {
      if (e !== null) this.cache.forget(e.account, e.server);
    };
    this.subs.push(
      listen(nc, subjects.serverEventsAll, subjectOnly(subjects.parseServerEvent), forget, {
        what: 'relay cache invalidation',
        log,
      }),
    );
    this.subs.push(
      nc.subscribe(subjects.proxyRelay, {
        queue: QueueGroups.proxy,
        callback: (err, msg) => {
          if (err !== null) return;
          const taken = takeRequest(msg, decodeRelayRequest, { instance, log, what: 'relay', refused });
          if (taken === undefined) return;
          const { req, reply } = taken;
          this.handle(req, extractTraceContext(msg.headers)).then(
            (result) => reply({ ok: true, instance, result } satisfies RelayReply),
            (e: unknown) => reply({ ok: false, instance, error: toWire(e).toJSON() } satisfies RelayReply),
          );
        },
      }),
    );
  }

  stop(): void {
    for (const sub of this.subs.splice(0)) sub.unsubscribe();
  }

  async handle(req: RelayRequest, parent: Context): Promise<Record<string, unknown>> {
    const started = performance.now();
    const span = this.deps.tracer.startSpan(
      'proxy.relay',
      {
        kind: SpanKind.SERVER,
        attributes: {
          'mcp.account': req.account,
          'mcpx.agent': req.agent,
          'mcpx.run': req.run,
          [McpAttributes.methodName]: req.method,
          [McpAttributes.server]: req.server,
        },
      },
      parent,
    );
    let outcome = 'ok';
    try {
      return await this.relay(req, span, trace.setSpan(parent, span));
    } catch (err) {
      // An answer the outbound bounds cut, as on a call's span (the cut itself is counted where it is heard).
      markResponseCut(span, err);
      const wire = relayError(err, req);
      outcome = wire.code;
      if (wire.code === ErrorCodes.internal)
        this.deps.log.error('a relayed request failed with an unexpected error', {
          method: req.method,
          ...spanIds(span),
          err: err as Error,
        });
      span.setStatus({ code: SpanStatusCode.ERROR, message: wire.message });
      throw wire;
    } finally {
      span.setAttribute(McpAttributes.outcome, outcome);
      span.end();
      this.total.add(1, { method: req.method, outcome });
      this.duration.record(performance.now() - started, { method: req.method, outcome });
    }
  }

  private async relay(
    req: RelayRequest,
    span: ReturnType<Tracer['startSpan']>,
    ctx: Context,
  ): Promise<Record<string, unknown>> {
    let server = await grantedServer(this.deps.catalog, req);
    // What the caller declared it answers can change a prompt's or a read's result: it is part of the key.
    const key = `${req.account}\u0000${req.server}\u0000${credentialsDigest(server)}\u0000${req.method}\u0000${JSON.stringify(req.params)}\u0000${INPUT_METHODS.has(req.method) ? JSON.stringify(req.answers ?? {}) : ''}`;
    // A re-sent request's result is its client's answers': never taken from, nor kept in, the cache.
    const cacheable = req.inputRequestId === undefined;
    const hit = cacheable ? this.cache.get(key) : undefined;
    span.setAttribute('mcpx.cache.hit', hit !== undefined);
    if (hit !== undefined) return hit;
    if (server.oauth !== undefined && this.deps.oauth?.expiring(server))
      server = await this.deps.oauth.refreshed(req.account, req.server, server, ctx);
    const timeoutMs = Math.min(req.timeoutMs ?? MAX_RELAY_TIMEOUT_MS, MAX_RELAY_TIMEOUT_MS);
    // A legacy (2025-11-25) connection is a session of the run's own (one endpoint token's): what
    // it answers may be that session's, narrower than the key's account and credentials, so it is
    // never kept for another run, whatever `ttlMs` it carries. A modern server sees no session.
    let session = false;
    // A modern request carries the relay span's context in its `_meta` (passed by hand: docs/operations.md#trace-context).
    const carried = traceCarrier(ctx);
    const sendOn =
      (params: Record<string, unknown>, opts: Parameters<RelaySend>[1]) =>
      async (conn: McpConnection): Promise<Record<string, unknown>> => {
        if (conn.era !== 'modern') session = true;
        const caps = conn.client.getServerCapabilities() as Record<string, unknown> | undefined;
        if (caps?.[CAPABILITY[req.method]] === undefined) return undeclared(req);
        return await conn.relay(req.method, params, { timeoutMs, ...opts, trace: carried });
      };
    const target = server;
    const send: RelaySend = (params, opts) =>
      this.deps.pool.use(req.account, req.run, req.server, target, sendOn(params, opts), false, ctx);
    const raw = await relayWithInputs(req, send, this.deps.inputs, span);
    // A ui:// resource that is not HTML is not passed on as an app (./app-resources.ts).
    const screened = req.method === 'resources/read' ? screenAppContents(raw) : raw;
    if (screened !== raw) span.setAttribute('mcpx.apps.not_html', true);
    const result = boundRelayResult(
      req.method,
      screened,
      Math.max(64 * 1024, this.deps.maxPayload - REPLY_MARGIN_BYTES),
    );
    if (cacheable && !session) this.cache.put(key, result);
    else if (session) span.setAttribute('mcpx.cache.session', true);
    return result;
  }
}
