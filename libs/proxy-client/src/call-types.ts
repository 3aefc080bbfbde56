import {
  ErrorCodes,
  WireError,
  type CallLog,
  type CallProgress,
  type InputRequestItem,
  type ProxyCallRequest,
} from '@mcpx/contracts';
import type { ProxyResult } from '@mcpx/domain';
import type { Context } from '@mcpx/telemetry';

/**
 * A call as the runtime asks for it: the fields of the proxy's call request (`ProxyCallRequest`
 * of `@mcpx/contracts`, documented there), the arguments, id and options optional, and the
 * listeners of its progress and log messages.
 */
export type CallInput = Pick<ProxyCallRequest, 'account' | 'agent' | 'run' | 'tool'> &
  Partial<
    Pick<
      ProxyCallRequest,
      | 'arguments'
      | 'callId'
      | 'timeoutMs'
      | 'approvalId'
      | 'inputRequestId'
      | 'inputResponses'
      | 'answers'
      | 'content'
      | 'task'
      | 'taskWaitMs'
      | 'logLevel'
    >
  > & {
    /**
     * Told of the server's progress while the call runs (docs/call.md#progress): the call is sent
     * with `progress: true` and its progress subject heard until the reply. At most 10 a second,
     * in the server's order; a malformed event is skipped.
     */
    onProgress?: (progress: CallProgress) => void;
    /**
     * The server's log messages at `logLevel` and above, while the call runs
     * (docs/endpoint.md#logging): its log subject heard until the reply, each message told to
     * `onLog` (a malformed one is skipped). Both or neither.
     */
    onLog?: (log: CallLog) => void;
    /**
     * The trace context the call belongs to, carried in the request's headers (never in its
     * payload). Default: the active one when the call is made.
     */
    trace?: Context;
  };

/** The `details` of an `input_required` error: what the server asks, by whom it is answered. */
export interface InputRequired {
  inputRequestId: string;
  tool: string;
  server: string;
  round: number;
  forPerson: boolean;
  requests: InputRequestItem[];
  expiresAt: string;
  /** Through InvokeTool: the run the call must be re-sent in. */
  run?: string;
  /** A re-send found the request still waiting for a person. */
  waiting?: boolean;
}

/** How {@link ProxyClient.callAwaitingInput} waits for answers. */
export interface InputWait {
  /** How long to wait for a person, all rounds together. */
  waitMs: number;
  /** Re-send at least this often while a person has not answered (the answered event is at most once). Default 5 s. */
  pollMs?: number;
  /** Told at each round a person must answer (show the question and its id). */
  onInputRequired?: (request: InputRequired) => void;
  /**
   * Answers the questions addressed to the runtime (`answerBy: 'runtime'`: sampling, and forms
   * when the agent lets the runtime answer them), by key. The model never sees `requestState`:
   * it stays in the proxy. Absent: a round with such a question fails with its `input_required`.
   */
  answer?: (questions: InputRequestItem[], request: InputRequired) => Promise<Record<string, unknown>>;
}

/** The `input_required` details of an error, or undefined. */
export function inputRequiredOf(err: unknown): InputRequired | undefined {
  if (!(err instanceof WireError) || err.code !== ErrorCodes.inputRequired) return undefined;
  const d = err.details as Partial<InputRequired>;
  return typeof d.inputRequestId === 'string' && Array.isArray(d.requests) ? (d as InputRequired) : undefined;
}

/** How {@link ProxyClient.callAwaitingApproval} waits for a human. */
export interface ApprovalWait {
  waitMs: number;
  /** Re-send at least this often (the decision event is at most once). Default 5 s. */
  pollMs?: number;
  /** Told once the call stopped, with the approval to decide. */
  onApprovalRequired?: (approvalId: string) => void;
}

export interface CallOutcome {
  result: ProxyResult;
  /** The proxy instance that ran the call; later calls of the run go straight to it. */
  instance: string;
  callId: string;
}

/**
 * How a caller notices that the proxy instance running its call died: after `afterMs` it asks
 * every `everyMs` whether an instance still holds the call (`mcp.proxy.calls.held`, `answerMs` to
 * answer); `misses` silences in a row end the wait with `call_lost`. Calls shorter than `afterMs`
 * cost nothing.
 */
export interface LivenessOptions {
  afterMs: number;
  everyMs: number;
  answerMs: number;
  misses: number;
}

export const DEFAULT_LIVENESS: LivenessOptions = { afterMs: 5_000, everyMs: 5_000, answerMs: 2_000, misses: 3 };
