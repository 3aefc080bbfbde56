import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  isInputRequiredResult,
  ProtocolError,
  ProtocolErrorCode,
  type CallToolResult,
  type InputRequiredResult,
} from '@modelcontextprotocol/server';
import type { CallLog } from '@mcpx/contracts';
import type { TokenGrant } from './agent-tokens.js';
import type { LegacyClients } from './legacy-clients.js';
import type { LogLevels } from './log-levels.js';
import { declaresForms, declaresUrl, type ToolCalls } from './tool-calls.js';
import type { TokenFailures } from './token-failures.js';
import type { AgentToolSet, ToolSets } from './tool-sets.js';
import { RELATED_TASK_META_KEY, clientQuestions, declaresTasksExtension, isCreatedTask } from './task-wire.js';
import type { EndpointTasks } from './endpoint-tasks.js';
import {
  header,
  isObject,
  leanCallOf,
  leanCandidate,
  legacyTaskCandidate,
  legacyTaskResultOf,
  mirrorsHeaders,
  type Json,
  type LeanRequestCall,
} from './lean-requests.js';
import {
  abortOnClose,
  type ClientClose,
  inputRequiredJson,
  resultJson,
  rpcErrorJson,
  sseMessage,
  SSE_HEADERS,
  type ServerInfo,
} from './lean-wire.js';
import { LegacyQuestions } from './legacy-questions.js';

/** Rounds of questions in one 2025 call (the SDK's shim allows 8). */
const MAX_ROUNDS = 8;

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
  serverInfo: ServerInfo;
  onError: (err: Error) => void;
}

/** What the SDK path is handed when the lean path does not serve a request, with its body. */
export type Fallback = (req: IncomingMessage, res: ServerResponse, body: string) => void;

/** A `tools/call` the lean path serves: the request's call under the tool's merged name, and the set it was found in. */
type LeanCall = LeanRequestCall & { toolSet: AgentToolSet };

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
  private readonly questions: LegacyQuestions;

  constructor(private readonly deps: LeanCallsDeps) {
    this.questions = new LegacyQuestions(deps.clients);
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
    cors?: Record<string, string>,
  ): void {
    this.serve(req, res, clientAddress, grant, body, fallback, server, cors).catch((err: unknown) => {
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
    cors: Record<string, string> | undefined,
  ): Promise<void> {
    const candidate = leanCandidate(req, clientAddress, this.deps);
    if (candidate === undefined || Buffer.byteLength(body) !== candidate.length)
      return this.legacyTaskRequest(req, res, clientAddress, grant, body, fallback, cors);
    const msg = jsonObjectOf(body);
    if (msg === undefined) return fallback(req, res, body);
    if (!candidate.modern && (await this.questions.answered(msg, grant, res, cors))) return;
    if (!candidate.modern && msg.method === 'initialize') await this.questions.rememberInitialize(grant, msg);
    // A 2025 client's tasks/result: its task's questions of it are asked on the answer's stream.
    if (!candidate.modern && msg.method === 'tasks/result') return this.taskResultOf(res, grant, msg, body, fallback);
    const call = leanCallOf(msg, candidate.modern, req);
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
    // A 2025 call asking for a task of a tool without task support: the SDK's path answers it as it does.
    if (call.asksTask === true && doc.taskSupport === undefined) return fallback(req, res, body);
    const named = { ...call, name: doc.name, toolSet: set };
    return candidate.modern ? this.modern(req, res, grant, named) : this.legacy(req, res, grant, named);
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
    close: ClientClose,
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
      gone: close,
      path: 'lean',
      ...(fresh ? { toolSet: call.toolSet } : {}),
      // A 2025 call that asked for a task answers with the created task; the client's declared answers go with it (call-input.ts).
      ...(call.asksTask === true ? { task: 'legacy' as const } : {}),
    };
  }

  private async modern(req: IncomingMessage, res: ServerResponse, grant: TokenGrant, call: LeanCall): Promise<void> {
    const abort = abortOnClose(res);
    const declared = {
      elicitation: declaresForms(call.caps.elicitation),
      elicitationUrl: declaresUrl(call.caps.elicitation),
      sampling: call.caps.sampling !== undefined,
      roots: call.caps.roots !== undefined,
    };
    // Written as soon as the call's outcome is known, before its span ends and its metrics are counted.
    let answered = false;
    const answer = (result: CallToolResult | InputRequiredResult | undefined, err: unknown): void => {
      if (answered) return;
      answered = true;
      abort.done();
      let text: string | undefined;
      // A handler's JSON-RPC error is answered with 200, but for -32021 (400), as the SDK answers it.
      let status = 200;
      if (result !== undefined) {
        try {
          const json = isInputRequiredResult(result)
            ? inputRequiredJson(result, this.deps.serverInfo)
            : resultJson(result, true, this.deps.serverInfo);
          text = JSON.stringify({ result: json, jsonrpc: '2.0', id: call.id });
        } catch (e) {
          err = e;
        }
      }
      if (text === undefined) {
        if (!(err instanceof ProtocolError)) this.deps.onError(err as Error);
        if (err instanceof ProtocolError && err.code === (ProtocolErrorCode.MissingRequiredClientCapability as number))
          status = 400;
        text = rpcErrorJson(call.id, err);
      }
      if (res.destroyed) return;
      res.writeHead(status, { 'content-type': 'application/json' });
      // The same bytes as a write and an end, sent at once (no uncork deferred to the next tick).
      res.end(text);
    };
    // What the call threw was answered; a throw before it was told anything is answered here.
    await this.deps.calls
      .call(this.callInput(req, grant, call, declared, abort), answer)
      .catch((err: unknown) => answer(undefined, err));
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
              res.write(sseMessage(JSON.stringify({ method: 'notifications/message', params: l, jsonrpc: '2.0' })));
            },
          };
    let text: string;
    try {
      let requestState: string | undefined;
      let inputResponses: Json | undefined;
      let final: CallToolResult | undefined;
      for (let round = 1; final === undefined; round++) {
        const result = await this.deps.calls.call({
          ...this.callInput(req, grant, call, declared, abort, round === 1),
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
        inputResponses = await this.questions.ask(grant, res, result, declared, abort.signal);
        // The client went away while asked: the call goes no further (an approval stays the owner's).
        if (abort.aborted) return;
        requestState = typeof result.requestState === 'string' ? result.requestState : undefined;
      }
      // A created task (`{task}`) goes as it was made.
      const json = isCreatedTask(final) ? final : resultJson(final, false, this.deps.serverInfo);
      text = JSON.stringify({ result: json, jsonrpc: '2.0', id: call.id });
    } catch (err) {
      text = this.failed(call.id, err);
    } finally {
      abort.done();
    }
    endStream(res, text);
  }

  /** A 2025 `tasks/result` whose body is exactly that, served here (its task's questions asked on its stream); else the SDK's. */
  private async taskResultOf(
    res: ServerResponse,
    grant: TokenGrant,
    msg: Json,
    body: string,
    fallback: Fallback,
    cors: Record<string, string> = {},
  ): Promise<void> {
    const asked = legacyTaskResultOf(msg);
    const tasks = this.deps.calls.tasks;
    if (asked === undefined || tasks === undefined) return fallback(res.req, res, body);
    return this.legacyTaskResult(res, grant, asked, tasks, cors);
  }

  /**
   * A 2025 request the lean path's rule leaves to the SDK's path (an `Origin`, no body length, a
   * larger body) that is a `tasks/result` or an answer to a question asked on one: served here
   * all the same, since the SDK's stateless serving can neither ask a task's questions nor take
   * their answers (docs/tasks.md#questions). Everything else goes to the SDK's path.
   */
  private async legacyTaskRequest(
    req: IncomingMessage,
    res: ServerResponse,
    clientAddress: string,
    grant: TokenGrant,
    body: string,
    fallback: Fallback,
    cors: Record<string, string> | undefined,
  ): Promise<void> {
    // Cheap first: only a body that names tasks/result, or has no method (an answer), is parsed.
    if (
      (body.includes('"method"') && !body.includes('"tasks/result"')) ||
      !legacyTaskCandidate(req, clientAddress, this.deps)
    )
      return fallback(req, res, body);
    const msg = jsonObjectOf(body);
    if (msg === undefined) return fallback(req, res, body);
    if (await this.questions.answered(msg, grant, res, cors)) return;
    if (msg.method === 'tasks/result') return this.taskResultOf(res, grant, msg, body, fallback, cors);
    return fallback(req, res, body);
  }

  /**
   * A 2025 `tasks/result` (docs/tasks.md#questions): waits for the task as the SDK's path does,
   * and meanwhile asks the client the task's questions addressed to it (its call declared that it
   * answers them) as requests related to the task on this answer's stream, with ids naming this
   * instance; each round's answers go to the task (`answerTask`), which then goes on upstream.
   */
  private async legacyTaskResult(
    res: ServerResponse,
    grant: TokenGrant,
    asked: { id: string | number; taskId: string },
    tasks: EndpointTasks,
    cors: Record<string, string>,
  ): Promise<void> {
    const abort = abortOnClose(res);
    const head = { ...SSE_HEADERS, ...cors };
    let text: string;
    try {
      const declared = await this.deps.clients.declared(grant.id);
      const related = { [RELATED_TASK_META_KEY]: { taskId: asked.taskId } };
      const result = await tasks.legacyResult(grant, asked.taskId, abort.signal, (_items, round) => {
        if (!res.headersSent) res.writeHead(200, head);
        const inputRequests = Object.fromEntries(
          Object.entries(clientQuestions(round)).map(([key, q]) => [
            key,
            { method: q.method, params: { ...q.params, _meta: related } },
          ]),
        );
        return this.questions.ask(grant, res, { inputRequests } as InputRequiredResult, declared, abort.signal);
      });
      text = JSON.stringify({ result: resultJson(result, false, this.deps.serverInfo), jsonrpc: '2.0', id: asked.id });
    } catch (err) {
      text = this.failed(asked.id, err);
    } finally {
      abort.done();
    }
    endStream(res, text, head);
  }

  /** The JSON-RPC error answering `id`; a fault that is not a server's JSON-RPC error is reported too. */
  private failed(id: string | number, err: unknown): string {
    if (!(err instanceof ProtocolError)) this.deps.onError(err as Error);
    return rpcErrorJson(id, err);
  }

  /** Stops the questions waiting (the service is stopping): each is answered as not answered. */
  close(): void {
    this.questions.close();
  }
}

/** Ends an answer's event stream with its last message (opening it if nothing was sent yet), unless the client went away. */
function endStream(res: ServerResponse, text: string, head: Record<string, string> = SSE_HEADERS): void {
  if (res.destroyed) return;
  if (!res.headersSent) res.writeHead(200, head);
  res.end(sseMessage(text));
}

/** The body as a JSON object; undefined when it is not JSON or not an object (the SDK's path answers it). */
function jsonObjectOf(body: string): Json | undefined {
  try {
    const msg: unknown = JSON.parse(body);
    return isObject(msg) ? msg : undefined;
  } catch {
    return undefined;
  }
}
