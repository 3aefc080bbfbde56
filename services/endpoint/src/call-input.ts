/** What a client's `tools/call` brings to the endpoint, and what its request says beyond the tool and arguments. */
import { INPUT_REQUEST_ID_RE, type CallLog, type CallProgress, type LogLevel } from '@mcpx/contracts';
import { ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server';
import type { TokenGrant } from './agent-tokens.js';
import type { TaskEra } from './task-wire.js';
import type { AgentToolSet } from './tool-sets.js';
import { META_APPROVAL_ID, META_INPUT_REQUEST_ID } from './call-result.js';

/** One `tools/call` as either serving path (the SDK's handler, the lean path) hands it over. */
export interface ToolCallInput {
  grant: TokenGrant;
  name: string;
  arguments: Record<string, unknown>;
  /** The request's `_meta` (the connector's keys, the trace context). */
  meta: Record<string, unknown> | undefined;
  /** Trace headers of the HTTP request (used when `_meta` has none). */
  headers?: { traceparent?: string | null; tracestate?: string | null };
  /** A 2026-07-28 retry's `requestState` and `inputResponses`. */
  requestState?: unknown;
  inputResponses?: Record<string, unknown>;
  /**
   * What the client can answer itself, as it declared: forms (elicitation), URL questions (URL
   * elicitation: the console link of an owner's decision) and sampling.
   */
  caps: { elicitation?: boolean; elicitationUrl?: boolean; sampling?: boolean; roots?: boolean };
  /** The JSON-RPC request id (a 2025 client's cancel names it). */
  requestId: string | number;
  /** The client going away: what the call listens to, and an abort signal for whoever needs one. */
  gone: ClientGone;
  /** Which path serves it (a span attribute): the SDK's handler, or the lean path beside it. */
  path: 'sdk' | 'lean';
  /** The agent's tool set as the serving path just read it (the call is judged on the same set, without reading it again). */
  toolSet?: AgentToolSet;
  /**
   * Sends the client a `notifications/progress` for its own `progressToken` (set when the request's
   * `_meta` carried one): the server's progress, relayed by the proxy (docs/endpoint.md#progress).
   */
  progress?: (progress: CallProgress) => void;
  /**
   * The server's log messages at `logLevel` and above, each sent to the client as
   * `notifications/message` by `log` (docs/endpoint.md#logging). Both or neither.
   */
  logLevel?: LogLevel;
  log?: (log: CallLog) => void;
  /** The client asked for a task, in this dialect: a task tool's call answers at once with the created task (docs/endpoint.md#tasks). */
  task?: TaskEra;
}

/** The client's `_meta.progressToken` (a string or an integer, as MCP says), or undefined. */
export function progressTokenOf(meta: Record<string, unknown> | undefined): string | number | undefined {
  const token = meta?.progressToken;
  if (typeof token === 'string' && token.length <= 256) return token;
  return typeof token === 'number' && Number.isSafeInteger(token) ? token : undefined;
}

/**
 * Whether a client's declared `elicitation` capability covers forms: `{form: …}`, or `{}` (the
 * 2025 form, which meant forms). One that declares only `url` cannot be asked a form.
 */
export function declaresForms(elicitation: unknown): boolean {
  if (elicitation === null || typeof elicitation !== 'object' || Array.isArray(elicitation)) return false;
  return Object.keys(elicitation).length === 0 || 'form' in elicitation;
}

/** Whether a client's declared `elicitation` capability covers URL questions (`{url: …}`). */
export function declaresUrl(elicitation: unknown): boolean {
  return elicitation !== null && typeof elicitation === 'object' && !Array.isArray(elicitation) && 'url' in elicitation;
}

/** Thrown for a tool the agent does not have: the MCP answer (InvalidParams), before the proxy is asked. */
export function unknownTool(name: string): ProtocolError {
  return new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${name.slice(0, 128)}`);
}

/** Whether a request's `_meta` is the 2026-07-28 envelope (a 2025 request carries no protocol version there). */
export function isModern(meta: unknown): boolean {
  return (
    meta !== null &&
    typeof meta === 'object' &&
    typeof (meta as Record<string, unknown>)['io.modelcontextprotocol/protocolVersion'] === 'string'
  );
}

/** The approval a call re-sent after the owner's decision names in `_meta`, when it is a sound id. */
export function metaApprovalId(meta: Record<string, unknown> | undefined): string | undefined {
  const id = meta?.[META_APPROVAL_ID];
  return typeof id === 'string' && id !== '' && id.length <= 128 ? id : undefined;
}

/**
 * The input request a call answers: a server's question passed on to this client comes back with
 * the answers and the id as its `requestState` (bound by the proxy to this run, tool and
 * arguments, used once); one the owner answered is re-sent with the id in `_meta`.
 */
export function inputRequestIdOf(echoed: unknown, meta: Record<string, unknown> | undefined): string | undefined {
  if (typeof echoed === 'string' && INPUT_REQUEST_ID_RE.test(echoed)) return echoed;
  const metaInput = meta?.[META_INPUT_REQUEST_ID];
  return typeof metaInput === 'string' && INPUT_REQUEST_ID_RE.test(metaInput) ? metaInput : undefined;
}

/** The kinds of question the client answers itself, as the proxy's `answers` says them. */
export function answersOf(input: ToolCallInput): {
  forms?: boolean;
  sampling?: boolean;
  roots?: boolean;
  tasks?: boolean;
} {
  return {
    ...(input.caps.elicitation === true ? { forms: true } : {}),
    ...(input.caps.sampling === true ? { sampling: true } : {}),
    ...(input.caps.roots === true ? { roots: true } : {}),
    // Its task's questions: on tasks/get (2026-07-28), on tasks/result (a 2025 client that answers any) (docs/tasks.md#questions).
    ...(input.task === 'modern' ||
    (input.task === 'legacy' && (input.caps.elicitation === true || input.caps.sampling === true))
      ? { tasks: true }
      : {}),
  };
}

/**
 * A client going away before its call is answered: listened to (`onAbort`), or as an abort signal.
 * The lean path's makes its signal only when asked (lean-wire.ts `ClientClose`); the SDK's paths
 * hand their request's ({@link goneOf}).
 */
export interface ClientGone {
  readonly signal: AbortSignal;
  /** Tells `fn` once if the client goes away; the returned function forgets it. */
  onAbort(fn: () => void): () => void;
}

/** The client going away as `signal` says it. */
export function goneOf(signal: AbortSignal): ClientGone {
  return new SignalGone(signal);
}

class SignalGone implements ClientGone {
  constructor(readonly signal: AbortSignal) {}

  onAbort(fn: () => void): () => void {
    this.signal.addEventListener('abort', fn, { once: true });
    return () => this.signal.removeEventListener('abort', fn);
  }
}
