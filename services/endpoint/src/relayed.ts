import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Counter, type Tracer } from '@opentelemetry/api';
import { ErrorCodes, INPUT_METHODS, WireError, toWireError, type RelayMethod } from '@mcpx/contracts';
import type { ProxyClient } from '@mcpx/proxy-client';
import { ProtocolError, ProtocolErrorCode, type Server } from '@modelcontextprotocol/server';
import type { TokenGrant } from './agent-tokens.js';
import type { ToolSets } from './tool-sets.js';
import { foreignState, isInputState, stateRefusal } from './input-states.js';
import { declaresForms, passOnInputRequired } from './tool-calls.js';
import { decodeMergedCursor, encodeMergedCursor, unwrapName, unwrapUri, wrapUri } from './faced-names.js';

/**
 * Resources, resource templates, prompts and completions of an agent's granted servers, relayed
 * through the proxy (`mcp.proxy.relay`: it holds the connections and credentials), on both faces
 * (docs/endpoint.md#resources-and-prompts):
 * - the per-server face serves its server's under their own names and URIs, as the server says them;
 * - the merged face names a prompt `<server>__<prompt>` and wraps a resource's URI in a URI that
 *   names its server: `mcpx://<server>/<URI, percent-encoded>`, or `ui://<server>/<URI,
 *   percent-encoded>` for an MCP Apps `ui://` resource (its scheme kept, so a host still knows it
 *   is an app). Both map back exactly; a name or URI that does not is refused as unknown.
 */

/** A page of a list, as the face answers it (the server's cache hints kept, or the endpoint's). */
type Result = Record<string, unknown>;

export interface RelayedDeps {
  toolSets: ToolSets;
  proxy: ProxyClient;
  tracer: Tracer;
  requests: Counter;
  /** The hints a list page carries when its server gives none (2026-07-28 requires them). */
  hints: { ttlMs: number; cacheScope: 'private' };
}

/** A relay's failure as the MCP error a client expects: the server's own code when it gave one. */
function protocolErrorOf(err: unknown, method: RelayMethod): ProtocolError {
  if (err instanceof ProtocolError) return err;
  const wire = err instanceof WireError ? err : toWireError(err);
  const data = { code: wire.code, details: wire.details };
  const mcpCode = (wire.details as { mcpCode?: unknown }).mcpCode;
  if (typeof mcpCode === 'number' && Number.isInteger(mcpCode) && mcpCode < 0)
    return new ProtocolError(mcpCode === -32002 ? ProtocolErrorCode.InvalidParams : mcpCode, wire.message, data);
  if (wire.code === ErrorCodes.invalidInput)
    return new ProtocolError(ProtocolErrorCode.InvalidParams, wire.message, data);
  if (wire.code === ErrorCodes.notGranted || wire.code === ErrorCodes.notFound)
    return new ProtocolError(ProtocolErrorCode.InvalidParams, `${method}: ${wire.message}`, data);
  return new ProtocolError(ProtocolErrorCode.InternalError, wire.message, data);
}

/** What a relayed `prompts/get` or `resources/read` carries for its input rounds (relay.ts `INPUT_METHODS`). */
interface InputRound {
  fields: {
    answers?: { forms?: boolean; sampling?: boolean; roots?: boolean };
    inputRequestId?: string;
    inputResponses?: Record<string, unknown>;
  };
}

/** The request handler's context, as far as input rounds read it. */
interface RoundContext {
  mcpReq: { requestState?: () => unknown; inputResponses?: Record<string, unknown> };
}

/**
 * A request's input round: what its client declared it answers (the server is told exactly that),
 * and on a retry the input request id it echoes as `requestState` with its answers. A state this
 * endpoint never gives is refused (input-states.ts); answers that are not a map of objects are a
 * protocol error, as on tools/call.
 */
function inputRound(server: Server, ctx: RoundContext | undefined): InputRound {
  const caps = server.getClientCapabilities() ?? {};
  const answers = {
    ...(declaresForms(caps.elicitation) ? { forms: true } : {}),
    ...(caps.sampling !== undefined ? { sampling: true } : {}),
    ...(caps.roots !== undefined ? { roots: true } : {}),
  };
  const state = ctx?.mcpReq.requestState?.();
  const responses = ctx?.mcpReq.inputResponses;
  if (state !== undefined && !isInputState(state)) throw foreignState();
  if (
    responses !== undefined &&
    (responses === null ||
      typeof responses !== 'object' ||
      Object.values(responses).some((a) => a === null || typeof a !== 'object' || Array.isArray(a)))
  ) {
    throw new ProtocolError(
      ProtocolErrorCode.InvalidParams,
      'inputResponses: must be a map of answers (objects) by request key',
    );
  }
  return {
    fields: {
      ...(Object.keys(answers).length > 0 ? { answers } : {}),
      ...(isInputState(state)
        ? { inputRequestId: state, ...(responses !== undefined ? { inputResponses: responses } : {}) }
        : {}),
    },
  };
}

const unknownName = (what: string, value: string): ProtocolError =>
  new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown ${what}: ${value.slice(0, 256)}`);

/**
 * Registers the relayed methods on a face's per-request `server`: the per-server face of `face`,
 * or the merged face (`face` undefined).
 */
export function registerRelayed(server: Server, grant: TokenGrant, face: string | undefined, deps: RelayedDeps): void {
  const relayed = new RelayedFace(grant, face, deps);
  if (face !== undefined) registerPerServer(server, relayed, face);
  else registerMerged(server, relayed);
}

/** One request's relays for a token on a face: each through the proxy as the token's run, traced and counted. */
class RelayedFace {
  private readonly run: string;

  constructor(
    private readonly grant: TokenGrant,
    private readonly face: string | undefined,
    readonly deps: RelayedDeps,
  ) {
    this.run = `ep-${grant.id}`;
  }

  /** One relayed request: its span and its count, the proxy's failure as an MCP error. */
  async relay(
    target: string,
    method: RelayMethod,
    params: Record<string, unknown>,
    rounds?: InputRound,
  ): Promise<Result> {
    const { grant, deps } = this;
    const span = deps.tracer.startSpan(`endpoint.${method}`, {
      kind: SpanKind.SERVER,
      attributes: {
        'mcpx.account': grant.account,
        'mcpx.agent': grant.agent,
        'mcp.server': target,
        'mcpx.face': this.face === undefined ? 'merged' : 'server',
      },
    });
    let outcome = 'ok';
    try {
      return await deps.proxy.relay(
        {
          account: grant.account,
          agent: grant.agent,
          run: this.run,
          server: target,
          method,
          params,
          ...rounds?.fields,
        },
        // The proxy's span joins this one's trace (passed by hand: this process's context does not follow awaits).
        { trace: trace.setSpan(ROOT_CONTEXT, span) },
      );
    } catch (err) {
      // The server's questions, all the client's own (the proxy refuses any other), as its input_required.
      const asked =
        rounds !== undefined && err instanceof WireError && err.code === ErrorCodes.inputRequired
          ? passOnInputRequired(err)
          : undefined;
      if (asked !== undefined) {
        outcome = 'input_required';
        return asked;
      }
      const badState =
        rounds?.fields.inputRequestId !== undefined && err instanceof WireError ? stateRefusal(err) : undefined;
      const e = badState ?? protocolErrorOf(err, method);
      outcome = err instanceof WireError ? err.code : 'error';
      span.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
      throw e;
    } finally {
      span.setAttribute('mcpx.outcome', outcome);
      span.end();
      deps.requests.add(1, { method, outcome });
    }
  }

  /** The servers the token's agent is granted now, sorted (the merged face's order). */
  async granted(): Promise<string[]> {
    const set = await this.deps.toolSets.get(this.grant.account, this.grant.agent);
    if (set === null) throw new ProtocolError(ProtocolErrorCode.InvalidRequest, 'the agent no longer exists');
    return [...set.granted].sort();
  }

  withHints(r: Result): Result {
    const { hints } = this.deps;
    return {
      ...r,
      ttlMs: typeof r.ttlMs === 'number' ? r.ttlMs : hints.ttlMs,
      cacheScope: r.cacheScope === 'public' || r.cacheScope === 'private' ? r.cacheScope : hints.cacheScope,
    };
  }

  /** A merged list: one server's page at a time, in server order, the cursor naming where it goes on. */
  async mergedList(
    method: RelayMethod,
    key: string,
    rename: (server: string, item: Record<string, unknown>) => Record<string, unknown>,
    cursor: string | undefined,
  ): Promise<Result> {
    const servers = await this.granted();
    const at = cursor === undefined ? { server: servers[0] } : decodeMergedCursor(cursor);
    let i = at.server === undefined ? servers.length : servers.indexOf(at.server);
    if (i < 0) throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'Invalid cursor');
    let upstream = cursor === undefined ? undefined : (at as { cursor?: string }).cursor;
    const unavailable: string[] = [];
    const missing = (): Result => (unavailable.length > 0 ? { _meta: { 'io.mcpx/unavailable': unavailable } } : {});
    // Empty servers are passed over, so a page is empty only at the end.
    for (; i < servers.length; i++, upstream = undefined) {
      const s = servers[i] as string;
      let page: Result;
      try {
        page = await this.relay(s, method, upstream === undefined ? {} : { cursor: upstream });
      } catch {
        unavailable.push(s);
        continue;
      }
      const items = Array.isArray(page[key]) ? (page[key] as Array<Record<string, unknown>>) : [];
      const next =
        typeof page.nextCursor === 'string'
          ? encodeMergedCursor(s, page.nextCursor)
          : servers[i + 1] !== undefined
            ? encodeMergedCursor(servers[i + 1] as string, undefined)
            : undefined;
      if (items.length === 0 && next !== undefined && typeof page.nextCursor !== 'string') continue;
      return {
        [key]: items.map((item) => rename(s, item)),
        ...this.deps.hints,
        ...(next !== undefined ? { nextCursor: next } : {}),
        ...missing(),
      };
    }
    return { [key]: [], ...this.deps.hints, ...missing() };
  }

  /** A merged face's URI mapped back to a granted server's; unknown otherwise. */
  async resourceOf(uri: string): Promise<{ server: string; uri: string }> {
    const back = unwrapUri(uri);
    if (back === undefined || !(await this.granted()).includes(back.server)) throw unknownName('resource', uri);
    return back;
  }

  /** A merged face's prompt name mapped back to a granted server's; unknown otherwise. */
  async promptOf(name: string): Promise<{ server: string; name: string }> {
    const back = unwrapName(name);
    if (back === undefined || !(await this.granted()).includes(back.server)) throw unknownName('prompt', name);
    return back;
  }
}

const cursorOf = (params: unknown): string | undefined => {
  const c = (params as { cursor?: unknown } | undefined)?.cursor;
  return typeof c === 'string' ? c : undefined;
};

const wrapContents = (s: string, r: Result): Result =>
  Array.isArray(r.contents)
    ? {
        ...r,
        contents: (r.contents as Array<Record<string, unknown>>).map((c) =>
          typeof c.uri === 'string' ? { ...c, uri: wrapUri(s, c.uri) } : c,
        ),
      }
    : r;

/** The per-server face: its server's resources, templates, prompts and completions under their own names. */
function registerPerServer(server: Server, relayed: RelayedFace, face: string): void {
  const pass = (method: RelayMethod, list: boolean) => async (request: { params?: unknown }, ctx?: RoundContext) => {
    const {
      _meta: _drop,
      inputResponses: _answers,
      requestState: _state,
      ...params
    } = (request.params ?? {}) as Record<string, unknown>;
    let r: Result;
    try {
      r = await relayed.relay(face, method, params, INPUT_METHODS.has(method) ? inputRound(server, ctx) : undefined);
    } catch (err) {
      // A read's miss names its URI in `data.uri`, as MCP asks of a server (SEP-2164).
      if (
        method === 'resources/read' &&
        err instanceof ProtocolError &&
        err.code === (ProtocolErrorCode.InvalidParams as number) &&
        typeof params.uri === 'string'
      ) {
        throw new ProtocolError(err.code, err.message, {
          ...(err.data as Record<string, unknown> | undefined),
          uri: params.uri.slice(0, 2_048),
        });
      }
      throw err;
    }
    return list ? relayed.withHints(r) : r;
  };
  server.setRequestHandler('resources/list', pass('resources/list', true) as never);
  server.setRequestHandler('resources/templates/list', pass('resources/templates/list', true) as never);
  server.setRequestHandler('resources/read', pass('resources/read', false) as never);
  server.setRequestHandler('prompts/list', pass('prompts/list', true) as never);
  server.setRequestHandler('prompts/get', pass('prompts/get', false) as never);
  server.setRequestHandler('completion/complete', pass('completion/complete', false) as never);
}

/** The merged face: every granted server's, prompts named `<server>__<prompt>`, URIs wrapped. */
function registerMerged(server: Server, relayed: RelayedFace): void {
  server.setRequestHandler('prompts/list', (async (request: { params?: unknown }) =>
    relayed.mergedList(
      'prompts/list',
      'prompts',
      (s, p) => ({ ...p, name: `${s}__${String(p.name)}` }),
      cursorOf(request.params),
    )) as never);
  server.setRequestHandler('resources/list', (async (request: { params?: unknown }) =>
    relayed.mergedList(
      'resources/list',
      'resources',
      (s, r) => ({ ...r, uri: wrapUri(s, String(r.uri)) }),
      cursorOf(request.params),
    )) as never);
  server.setRequestHandler('resources/templates/list', (async (request: { params?: unknown }) =>
    relayed.mergedList(
      'resources/templates/list',
      'resourceTemplates',
      (s, t) => ({ ...t, uriTemplate: wrapUri(s, String(t.uriTemplate), true) }),
      cursorOf(request.params),
    )) as never);
  server.setRequestHandler('resources/read', (async (request: { params: { uri: string } }, ctx?: RoundContext) => {
    const back = await relayed.resourceOf(request.params.uri);
    const r = await relayed.relay(back.server, 'resources/read', { uri: back.uri }, inputRound(server, ctx));
    return r.resultType === 'input_required' ? r : wrapContents(back.server, r);
  }) as never);
  server.setRequestHandler('prompts/get', (async (
    request: { params: { name: string; arguments?: Record<string, string> } },
    ctx?: RoundContext,
  ) => {
    const back = await relayed.promptOf(request.params.name);
    return await relayed.relay(
      back.server,
      'prompts/get',
      { name: back.name, ...(request.params.arguments !== undefined ? { arguments: request.params.arguments } : {}) },
      inputRound(server, ctx),
    );
  }) as never);
  server.setRequestHandler('completion/complete', (async (request: {
    params: { ref: { type: string; name?: string; uri?: string }; argument: unknown; context?: unknown };
  }) => {
    const { ref, argument, context } = request.params;
    let target: string;
    let own: Record<string, unknown>;
    if (ref.type === 'ref/prompt') {
      const back = await relayed.promptOf(String(ref.name));
      target = back.server;
      own = { type: 'ref/prompt', name: back.name };
    } else {
      const back = await relayed.resourceOf(String(ref.uri).replace(/\{/g, '%7B').replace(/\}/g, '%7D'));
      target = back.server;
      own = { type: 'ref/resource', uri: back.uri };
    }
    return await relayed.relay(target, 'completion/complete', {
      ref: own,
      argument,
      ...(context !== undefined ? { context } : {}),
    });
  }) as never);
}
