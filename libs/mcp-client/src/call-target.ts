/** Where the library's own `tools/call` goes (`./tool-call.ts`), and the options of one call. */
import type { ClientCapabilities, Implementation, Progress, Tool } from '@modelcontextprotocol/client';
import type { ClassifyContext } from './classify.js';
import type { McpHttpRequest } from './http-request.js';

export type ToolCallTarget = ModernTarget | LegacyTarget;

interface TargetBase {
  url: URL;
  request: McpHttpRequest;
  /** The configured static headers (auth). */
  headers: Record<string, string>;
}

export interface ModernTarget extends TargetBase {
  era: 'modern';
  protocolVersion: string;
  capabilities: ClientCapabilities;
  clientInfo: Implementation;
  /** `traceparent`/`tracestate` of the active trace, for `_meta`. */
  traceMeta: () => Record<string, string> | undefined;
}

export interface LegacyTarget extends TargetBase {
  era: 'legacy';
  sessionId: string;
  protocolVersion: string | undefined;
  /** Sends `notifications/cancelled` for a request id on the session (best effort). */
  cancelled(requestId: string, reason: string): void;
  /**
   * Answers a request the server pushes on the call's response stream (2025-11-25: e.g.
   * `elicitation/create`), resolving with the JSON-RPC `result` or rejecting with the error;
   * the answer is POSTed back on the session. Unset: every such request is refused (-32601).
   */
  serverRequest?: (method: string, params: unknown, signal: AbortSignal) => Promise<unknown>;
}

export interface ToolCallOptions {
  timeoutMs: number;
  signal?: AbortSignal;
  /**
   * The caller's own controller, made the call's (instead of `signal`): aborting it cancels the
   * call, and the call's timeout aborts it.
   */
  controller?: AbortController;
  /** The listed definition: its `x-mcp-header` parameters become `Mcp-Param-*` headers (modern). */
  tool?: Tool;
  /** Asks for progress (a `progressToken` in `_meta`); told of each `notifications/progress`. */
  onProgress?: (progress: Progress) => void;
  /** Restart the timeout on each progress notification. */
  resetTimeoutOnProgress?: boolean;
  /** Told when a broken legacy response stream was resumed, or could not be. */
  onResume?: (outcome: 'resumed' | 'failed') => void;
  /** Capabilities this call declares beyond the target's (modern: merged into `_meta`). */
  capabilities?: ClientCapabilities;
  /** Capabilities this call declares instead of the target's (modern); `capabilities` is then not used. */
  onlyCapabilities?: ClientCapabilities;
  /** How the connection classifies a failure (secrets to scrub, the last challenge, the era). */
  classify?: ClassifyContext;
  /** A task-augmented modern call: the tasks extension is declared in `_meta` (docs/tasks.md). */
  tasks?: boolean;
  /**
   * The least severe log level the caller wants of this call (modern: `_meta` logLevel; a legacy
   * session's level is set beforehand by the connection). Unset: a modern server logs nothing.
   */
  logLevel?: string;
  /** Told of each `notifications/message` on the call's response stream (unchecked: the caller bounds it). */
  onLog?: (params: unknown) => void;
  /**
   * The W3C trace carrier (`traceparent`, `tracestate`) of the caller's span, for a caller whose
   * context does not follow awaits: sent in the POST's headers and, modern, its `_meta`.
   * Unset: the target's `traceMeta` (the active context) in `_meta`, the request function's own headers.
   */
  trace?: Record<string, string>;
}
