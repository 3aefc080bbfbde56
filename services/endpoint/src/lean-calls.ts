import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  isInputRequiredResult,
  ProtocolError,
  ProtocolErrorCode,
  SUPPORTED_PROTOCOL_VERSIONS,
  validateHostHeader,
  type CallToolResult,
  type InputRequiredResult,
} from '@modelcontextprotocol/server';
import type { CallLog } from '@mcpx/contracts';
import type { McpToolDocument } from '@mcpx/domain';
import type { TokenGrant } from './agent-tokens.js';
import type { Declared, LegacyClients } from './legacy-clients.js';
import type { LogLevels } from './log-levels.js';
import { declaresForms, declaresUrl, type ToolCalls } from './tool-calls.js';
import type { TokenFailures } from './token-failures.js';
import type { AgentToolSet, ToolSets } from './tool-sets.js';
import { FACE_PATH_RE } from './faces.js';
import { declaresTasksExtension } from './task-wire.js';

const MODERN_VERSION = '2026-07-28';
const LEGACY_VERSIONS = new Set<string>(SUPPORTED_PROTOCOL_VERSIONS);
/** Bodies the lean path takes; a larger one (or one without a length) goes to the SDK as it is. */
const LEAN_MAX_BODY = 256 * 1024;
const PARAM_KEYS = new Set(['name', 'arguments', '_meta']);
const BODY_KEYS = new Set(['jsonrpc', 'id', 'method', 'params']);
/** A 2025 client's answer to a question asked during its call is awaited this long at most. */
const LEGACY_ANSWER_MS = 5 * 60_000;
/** Questions asked of 2025 clients and not answered yet, per instance (each holds a call open). */
const MAX_PENDING_QUESTIONS = 1_000;
/** Rounds of questions in one 2025 call (the SDK's shim allows 8). */
const MAX_ROUNDS = 8;
const SSE_HEADERS = {
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'content-type': 'text/event-stream',
  'x-accel-buffering': 'no',
};

export interface LeanCallsDeps {
  toolSets: ToolSets;
  failures: TokenFailures;
  calls: ToolCalls;
  /** What 2025 clients declared, and their answers, across the endpoint's instances. */
  clients: LegacyClients;
  /** The log levels 2025 clients set: a call of such a token streams its server's log messages (docs/endpoint.md#logging). */
  logLevels: LogLevels;
  allowedHosts: string[];
  /** The server's name and version, as the SDK's results carry them in `_meta` (2026-07-28). */
  serverInfo: { name: string; version: string };
  onError: (err: Error) => void;
}

/** What the SDK path is handed when the lean path does not serve a request, with its body. */
export type Fallback = (req: IncomingMessage, res: ServerResponse, body: string) => void;

type Json = Record<string, unknown>;

/** A `tools/call` the lean path serves: the request's call under the tool's merged name, and the set it was found in. */
type LeanCall = NonNullable<ReturnType<LeanCalls['callOf']>> & { toolSet: AgentToolSet };

function isObject(v: unknown): v is Json {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? undefined : v;
}

/** Whether a tool declares `x-mcp-header` parameters (the SDK checks their mirrored headers: its path serves it). */
const mirrored = new WeakMap<McpToolDocument, boolean>();
function mirrorsHeaders(doc: McpToolDocument): boolean {
  let v = mirrored.get(doc);
  if (v === undefined) mirrored.set(doc, (v = JSON.stringify(doc.inputSchema ?? {}).includes('x-mcp-header')));
  return v;
}

/**
 * A `tools/call` result as the SDK's codec writes it: its keys in the schema's order (`_meta`,
 * `content`, `structuredContent`, `isError`), then `resultType` and the server's info in `_meta`
 * on 2026-07-28; the 2025 result has neither.
 */
function resultJson(r: CallToolResult, modern: boolean, serverInfo: LeanCallsDeps['serverInfo']): Json {
  const out: Json = {};
  const info = { 'io.modelcontextprotocol/serverInfo': serverInfo };
  if (r._meta !== undefined) out._meta = modern ? { ...r._meta, ...info } : r._meta;
  out.content = r.content;
  if (r.structuredContent !== undefined) out.structuredContent = r.structuredContent;
  if (r.isError !== undefined) out.isError = r.isError;
  if (modern) {
    out.resultType = 'complete';
    if (r._meta === undefined) out._meta = info;
  }
  return out;
}

/** An `input_required` result as the SDK writes it (2026-07-28 only). */
function inputRequiredJson(r: InputRequiredResult, serverInfo: LeanCallsDeps['serverInfo']): Json {
  const { _meta, ...rest } = r as InputRequiredResult & { _meta?: Json };
  return { ...rest, _meta: { ...(_meta ?? {}), 'io.modelcontextprotocol/serverInfo': serverInfo } };
}

function rpcErrorJson(id: string | number, err: unknown): string {
  if (err instanceof ProtocolError)
    return JSON.stringify({
      jsonrpc: '2.0',
      id,
      error: { code: err.code, message: err.message, ...(err.data !== undefined ? { data: err.data } : {}) },
    });
  return JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32603, message: 'Internal error' } });
}

/**
 * The lean `tools/call` path beside the SDK's handler: a POST whose body is one `tools/call` of a
 * tool the agent has, from a client whose request the SDK would take as it is (Host allowed, no
 * Origin, the 2026-07-28 envelope and headers consistent, or a plain 2025 call), is answered here with the bytes the SDK's path writes (JSON on 2026-07-28;
 * one SSE event on 2025), through the same {@link ToolCalls}. It is handed requests whose headers
 * were admitted (the token of the path's agent: `EndpointHandler.admit`) and whose body was read
 * within the inbound bounds; everything else goes to the SDK's path unchanged, so each rule has
 * one implementation.
 *
 * It also does for 2025 clients what the SDK's stateless serving cannot: a client that declared
 * elicitation (or sampling) in its initialize gets the questions of its call (an approval its
 * token's user may give, a server's form) as `elicitation/create` requests on the call's SSE
 * stream, and its answer (a POST of the JSON-RPC response) goes on with the call. Behind several
 * instances without affinity, what the client declared and its answers reach the instance that
 * serves its call wherever they were posted ({@link LegacyClients}).
 */
export class LeanCalls {
  /** Questions asked of 2025 clients, by their JSON-RPC id: the token they were asked of and the answer's resolver. */
  private readonly questions = new Map<string, { tokenId: string; resolve: (answer: Json | undefined) => void }>();

  constructor(private readonly deps: LeanCallsDeps) {
    deps.clients.listen((tokenId, id, result) => this.take(tokenId, id, result));
  }

  /**
   * Serves an admitted request (its token's `grant`, its `body` read; `server` on a per-server
   * face) here or hands it to `fallback`.
   */
  handle(
    req: IncomingMessage,
    res: ServerResponse,
    clientAddress: string,
    grant: TokenGrant,
    body: string,
    fallback: Fallback,
    server?: string,
  ): void {
    this.serve(req, res, clientAddress, grant, body, fallback, server).catch((err: unknown) => {
      this.deps.onError(err as Error);
      if (!res.headersSent) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal server error' }, id: null }),
        );
      } else res.end();
    });
  }

  private async serve(
    req: IncomingMessage,
    res: ServerResponse,
    clientAddress: string,
    grant: TokenGrant,
    body: string,
    fallback: Fallback,
    server: string | undefined,
  ): Promise<void> {
    const candidate = this.candidate(req, clientAddress);
    if (candidate === undefined || Buffer.byteLength(body) !== candidate.length) return fallback(req, res, body);
    let msg: unknown;
    try {
      msg = JSON.parse(body);
    } catch {
      return fallback(req, res, body);
    }
    if (!isObject(msg)) return fallback(req, res, body);
    if (!candidate.modern && (await this.legacyMessage(msg, grant, res))) return;
    if (!candidate.modern && msg.method === 'initialize') await this.rememberInitialize(grant, msg);
    const call = this.callOf(msg, candidate.modern, req);
    if (call === undefined) return fallback(req, res, body);
    const set = await this.deps.toolSets.get(grant.account, grant.agent).catch(() => null);
    // On a per-server face the client names the tool by its server's name; the call is its document's.
    const doc =
      server === undefined
        ? set?.byName.get(call.name)
        : set?.granted.has(server) === true
          ? set.byServer.get(server)?.byRemote.get(call.name)
          : undefined;
    if (set === null || doc === undefined || mirrorsHeaders(doc)) return fallback(req, res, body);
    // A task tool's call by a client that declared tasks may become a task: the SDK's path answers it.
    if (doc.taskSupport !== undefined && declaresTasksExtension(call.caps)) return fallback(req, res, body);
    const named = { ...call, name: doc.name, toolSet: set };
    if (candidate.modern) await this.modern(req, res, grant, named);
    else await this.legacy(req, res, grant, named);
  }

  /** A POST the lean path may serve, judged from its headers alone: the body's length and the era. */
  private candidate(req: IncomingMessage, clientAddress: string): { length: number; modern: boolean } | undefined {
    if (req.method !== 'POST') return undefined;
    if (!FACE_PATH_RE.test((req.url ?? '').split('?')[0] ?? '')) return undefined;
    if (!(header(req, 'content-type') ?? '').startsWith('application/json')) return undefined;
    const length = Number(header(req, 'content-length'));
    if (!Number.isSafeInteger(length) || length <= 0 || length > LEAN_MAX_BODY) return undefined;
    // Browsers (an Origin) and mirrored tool parameters: the SDK's path checks them. A session id
    // is a 2025 client's (the endpoint issued it at initialize; the serving is stateless).
    if (
      req.headers.origin !== undefined ||
      (req.headers['mcp-session-id'] !== undefined && header(req, 'mcp-method') !== undefined)
    )
      return undefined;
    for (const name of Object.keys(req.headers)) if (name.startsWith('mcp-param-')) return undefined;
    const method = header(req, 'mcp-method');
    const version = header(req, 'mcp-protocol-version');
    const accept = header(req, 'accept') ?? '';
    let modern: boolean;
    if (method !== undefined) {
      if (method !== 'tools/call' || version !== MODERN_VERSION || !accept.includes('application/json'))
        return undefined;
      modern = true;
    } else {
      if (version !== undefined && !LEGACY_VERSIONS.has(version)) return undefined;
      if (!accept.includes('application/json') || !accept.includes('text/event-stream')) return undefined;
      modern = false;
    }
    if (!validateHostHeader(header(req, 'host') ?? null, this.deps.allowedHosts).ok) return undefined;
    if (this.deps.failures.blocked(clientAddress) !== undefined) return undefined;
    return { length, modern };
  }

  /** The call of a body that is exactly one `tools/call` the SDK would take; else undefined. */
  private callOf(
    msg: Json,
    modern: boolean,
    req: IncomingMessage,
  ): { id: string | number; name: string; arguments: Json; meta: Json | undefined; caps: Json } | undefined {
    if (
      msg.jsonrpc !== '2.0' ||
      msg.method !== 'tools/call' ||
      (typeof msg.id !== 'string' && typeof msg.id !== 'number')
    )
      return undefined;
    for (const k of Object.keys(msg)) if (!BODY_KEYS.has(k)) return undefined;
    const params = msg.params;
    if (!isObject(params) || typeof params.name !== 'string') return undefined;
    for (const k of Object.keys(params)) if (!PARAM_KEYS.has(k)) return undefined;
    if (params.arguments !== undefined && !isObject(params.arguments)) return undefined;
    const meta = params._meta;
    // Progress and log messages stream: the SDK's path.
    if (
      meta !== undefined &&
      (!isObject(meta) || meta.progressToken !== undefined || meta['io.modelcontextprotocol/logLevel'] !== undefined)
    )
      return undefined;
    let caps: Json = {};
    if (modern) {
      if (
        meta === undefined ||
        meta['io.modelcontextprotocol/protocolVersion'] !== MODERN_VERSION ||
        header(req, 'mcp-name') !== params.name
      )
        return undefined;
      const declared = meta['io.modelcontextprotocol/clientCapabilities'];
      const info = meta['io.modelcontextprotocol/clientInfo'];
      if (!isObject(declared) || !isObject(info) || typeof info.name !== 'string' || typeof info.version !== 'string')
        return undefined;
      caps = declared;
    } else if (meta !== undefined && 'io.modelcontextprotocol/protocolVersion' in meta) return undefined;
    return { id: msg.id, name: params.name, arguments: params.arguments ?? {}, meta, caps };
  }

  /**
   * What both eras hand the shared call: the request's tool, arguments, trace headers and the
   * client's declared answers; the tool set the tool was found in only when `fresh` (a later round
   * of a 2025 call, which may come minutes later, reads the set again).
   */
  private callInput(
    req: IncomingMessage,
    grant: TokenGrant,
    call: LeanCall,
    caps: Parameters<LeanCallsDeps['calls']['call']>[0]['caps'],
    signal: AbortSignal,
    fresh = true,
  ): Parameters<LeanCallsDeps['calls']['call']>[0] {
    return {
      grant,
      name: call.name,
      arguments: call.arguments,
      meta: call.meta,
      headers: { traceparent: header(req, 'traceparent'), tracestate: header(req, 'tracestate') },
      caps,
      requestId: call.id,
      signal,
      path: 'lean',
      ...(fresh ? { toolSet: call.toolSet } : {}),
    };
  }

  private async modern(req: IncomingMessage, res: ServerResponse, grant: TokenGrant, call: LeanCall): Promise<void> {
    const abort = abortOnClose(res);
    let text: string;
    // A handler's JSON-RPC error is answered with 200, but for -32021 (400), as the SDK answers it.
    let status = 200;
    try {
      const declared = {
        elicitation: declaresForms(call.caps.elicitation),
        elicitationUrl: declaresUrl(call.caps.elicitation),
        sampling: call.caps.sampling !== undefined,
        roots: call.caps.roots !== undefined,
      };
      const result = await this.deps.calls.call(this.callInput(req, grant, call, declared, abort.signal));
      const json = isInputRequiredResult(result)
        ? inputRequiredJson(result, this.deps.serverInfo)
        : resultJson(result, true, this.deps.serverInfo);
      text = JSON.stringify({ result: json, jsonrpc: '2.0', id: call.id });
    } catch (err) {
      if (!(err instanceof ProtocolError)) this.deps.onError(err as Error);
      if (err instanceof ProtocolError && err.code === (ProtocolErrorCode.MissingRequiredClientCapability as number))
        status = 400;
      text = rpcErrorJson(call.id, err);
    } finally {
      abort.done();
    }
    if (res.destroyed) return;
    res.writeHead(status, { 'content-type': 'application/json' });
    // The same bytes as a write and an end, sent at once (no uncork deferred to the next tick).
    res.end(text);
  }

  private async legacy(req: IncomingMessage, res: ServerResponse, grant: TokenGrant, call: LeanCall): Promise<void> {
    const abort = abortOnClose(res);
    const declared = await this.deps.clients.declared(grant.id);
    // A level the token's client set: the server's log messages go on the call's stream, as the SDK's path sends them.
    const logLevel = await this.deps.logLevels.get(grant.id);
    const logs =
      logLevel === undefined
        ? {}
        : {
            logLevel,
            log: (l: CallLog): void => {
              if (res.destroyed) return;
              if (!res.headersSent) res.writeHead(200, SSE_HEADERS);
              res.write(
                `event: message\ndata: ${JSON.stringify({ method: 'notifications/message', params: l, jsonrpc: '2.0' })}\n\n`,
              );
            },
          };
    let text: string;
    try {
      let requestState: string | undefined;
      let inputResponses: Json | undefined;
      let final: CallToolResult | undefined;
      for (let round = 1; final === undefined; round++) {
        const result = await this.deps.calls.call({
          ...this.callInput(req, grant, call, declared, abort.signal, round === 1),
          ...logs,
          ...(requestState !== undefined ? { requestState } : {}),
          ...(inputResponses !== undefined ? { inputResponses } : {}),
        });
        if (!isInputRequiredResult(result)) {
          final = result;
          break;
        }
        if (round > MAX_ROUNDS) {
          final = {
            content: [{ type: 'text', text: `Input required by 'tools/call' exceeded ${MAX_ROUNDS} rounds` }],
            isError: true,
          };
          break;
        }
        if (!res.headersSent) res.writeHead(200, SSE_HEADERS);
        inputResponses = await this.ask(grant, res, result, declared, abort.signal);
        // The client went away while asked: the call goes no further (an approval stays the owner's).
        if (abort.signal.aborted) return;
        requestState = typeof result.requestState === 'string' ? result.requestState : undefined;
      }
      text = JSON.stringify({ result: resultJson(final, false, this.deps.serverInfo), jsonrpc: '2.0', id: call.id });
    } catch (err) {
      if (!(err instanceof ProtocolError)) this.deps.onError(err as Error);
      text = rpcErrorJson(call.id, err);
    } finally {
      abort.done();
    }
    if (res.destroyed) return;
    if (!res.headersSent) res.writeHead(200, SSE_HEADERS);
    res.end(`event: message\ndata: ${text}\n\n`);
  }

  /**
   * The questions of one round as server-to-client requests on the call's SSE stream, and their
   * answers by key; a question the client did not declare it can answer, or did not answer in
   * time, is answered `cancel` for it (an approval then waits for the owner).
   */
  private async ask(
    grant: TokenGrant,
    res: ServerResponse,
    result: InputRequiredResult,
    declared: Declared,
    signal: AbortSignal,
  ): Promise<Json> {
    const entries = Object.entries(
      (result.inputRequests ?? {}) as Record<string, { method: string; params?: unknown }>,
    );
    const answers = await Promise.all(
      entries.map(async ([key, q]): Promise<[string, Json]> => {
        // A URL question (an approval's console link) goes to a client that opens them, with its
        // elicitationId, as 2025-11-25 requires of URL-mode elicitation; a form to one that answers forms.
        const url = q.method === 'elicitation/create' && (q.params as { mode?: unknown } | undefined)?.mode === 'url';
        const can =
          q.method === 'elicitation/create'
            ? url
              ? declared.elicitationUrl === true
              : declared.elicitation
            : q.method === 'sampling/createMessage'
              ? declared.sampling
              : false;
        if (!can || this.questions.size >= MAX_PENDING_QUESTIONS || signal.aborted) return [key, { action: 'cancel' }];
        const id = this.deps.clients.questionId();
        const answered = new Promise<Json | undefined>((resolve) => {
          const timer = setTimeout(() => resolve(undefined), LEGACY_ANSWER_MS);
          const onAbort = (): void => resolve(undefined);
          signal.addEventListener('abort', onAbort, { once: true });
          this.questions.set(id, {
            tokenId: grant.id,
            resolve: (a) => {
              clearTimeout(timer);
              signal.removeEventListener('abort', onAbort);
              resolve(a);
            },
          });
        });
        res.write(
          `event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id, method: q.method, params: q.params })}\n\n`,
        );
        try {
          const a = await answered;
          return [key, isObject(a) ? a : { action: 'cancel' }];
        } finally {
          this.questions.delete(id);
        }
      }),
    );
    return Object.fromEntries(answers);
  }

  /**
   * A 2025 client's answer to one of its questions, taken here or by the instance that asked it
   * (202), true; anything else, false.
   */
  private async legacyMessage(msg: Json, grant: TokenGrant, res: ServerResponse): Promise<boolean> {
    if (msg.method !== undefined || typeof msg.id !== 'string' || msg.jsonrpc !== '2.0') return false;
    // An error answer (the client cannot do it after all) is no answer.
    const result = isObject(msg.result) ? msg.result : undefined;
    if (!this.take(grant.id, msg.id, result) && !(await this.deps.clients.forward(grant.id, msg.id, result)))
      return false;
    res.writeHead(202);
    res.end();
    return true;
  }

  /** Resolves a question of this instance with its answer, if it was asked of this token and still waits. */
  private take(tokenId: string, id: string, result: Json | undefined): boolean {
    const q = this.questions.get(id);
    if (q === undefined || q.tokenId !== tokenId) return false;
    this.questions.delete(id);
    q.resolve(result);
    return true;
  }

  private async rememberInitialize(grant: TokenGrant, msg: Json): Promise<void> {
    const caps = isObject(msg.params) && isObject(msg.params.capabilities) ? msg.params.capabilities : {};
    await this.deps.clients.remember(grant.id, {
      elicitation: declaresForms(caps.elicitation),
      sampling: caps.sampling !== undefined,
      elicitationUrl: declaresUrl(caps.elicitation),
    });
  }

  /** Stops the questions waiting (the service is stopping): each is answered as not answered. */
  close(): void {
    this.deps.clients.close();
    for (const q of this.questions.values()) q.resolve(undefined);
    this.questions.clear();
  }
}

/** An abort signal fired when the client goes away before the answer is written. */
function abortOnClose(res: ServerResponse): { signal: AbortSignal; done: () => void } {
  const ac = new AbortController();
  let finished = false;
  res.once('close', () => {
    if (!finished) ac.abort();
  });
  return {
    signal: ac.signal,
    done: () => {
      finished = true;
    },
  };
}
