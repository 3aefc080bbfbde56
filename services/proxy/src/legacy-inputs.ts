import type {
  CreateMessageRequestParams,
  CreateMessageResult,
  ElicitRequestParams,
  ElicitResult,
  McpCallResult,
  McpConnection,
} from '@mcpx/mcp-client';

/**
 * A question a legacy server pushed during a call (`elicitation/create` for a person or the
 * runtime, `sampling/createMessage` for the runtime's model), and how to answer it.
 */
export type PushedQuestion =
  | {
      method: 'elicitation/create';
      params: ElicitRequestParams;
      answer(result: ElicitResult): void;
      refuse(err: Error): void;
    }
  | {
      method: 'sampling/createMessage';
      params: CreateMessageRequestParams;
      answer(result: CreateMessageResult): void;
      refuse(err: Error): void;
    };

/** One call in flight on a legacy connection: the questions its server pushes, in order. */
export class CallChannel {
  private waiting: ((q: PushedQuestion) => void) | undefined;
  private readonly queued: PushedQuestion[] = [];

  push(q: PushedQuestion): void {
    const w = this.waiting;
    if (w !== undefined) {
      this.waiting = undefined;
      w(q);
    } else this.queued.push(q);
  }

  next(): Promise<PushedQuestion> {
    const q = this.queued.shift();
    if (q !== undefined) return Promise.resolve(q);
    return new Promise((resolve) => (this.waiting = resolve));
  }
}

/** The call's result, or the next question its server pushed first. */
export type Raced = { kind: 'result'; result: McpCallResult } | { kind: 'question'; question: PushedQuestion };

export function raceQuestion(pending: Promise<McpCallResult>, channel: CallChannel): Promise<Raced> {
  return Promise.race([
    pending.then((result): Raced => ({ kind: 'result', result })),
    channel.next().then((question): Raced => ({ kind: 'question', question })),
  ]);
}

/** A legacy call whose server is waiting for the answer to its question, held on this instance. */
export interface ParkedCall {
  result: Promise<McpCallResult>;
  channel: CallChannel;
  question: PushedQuestion;
}

/**
 * Legacy-era (2025-11-25) servers ask by pushing `elicitation/create` on the session while the call
 * runs. The server's request is held here (on the instance whose session it is: a run's calls stick
 * to it) while the caller gets `input_required`; the re-sent call answers it, and the server's call
 * goes on — within the call's own timeout, since the server holds its request open. A pushed
 * `sampling/createMessage` takes the same way to the runtime. A question on a connection with more
 * than one call in flight cannot be told apart and is refused.
 */
export class LegacyAsks {
  private readonly active = new Map<McpConnection, Set<CallChannel>>();
  private readonly parked = new Map<string, ParkedCall>();

  /** Marks `channel`'s call as in flight on `conn`; returns its release. */
  track(conn: McpConnection, channel: CallChannel): () => void {
    let set = this.active.get(conn);
    if (set === undefined) this.active.set(conn, (set = new Set()));
    set.add(channel);
    return () => {
      set.delete(channel);
      if (set.size === 0 && this.active.get(conn) === set) this.active.delete(conn);
    };
  }

  /** The pool's handler of a pushed `elicitation/create` on `conn`. */
  onElicitation(
    conn: McpConnection | undefined,
    params: ElicitRequestParams,
    signal: AbortSignal,
  ): Promise<ElicitResult> {
    return this.routed<ElicitResult>(conn, signal, (answer, refuse) => ({
      method: 'elicitation/create',
      params,
      answer,
      refuse,
    }));
  }

  /** The pool's handler of a pushed `sampling/createMessage` on `conn`. */
  onSampling(
    conn: McpConnection | undefined,
    params: CreateMessageRequestParams,
    signal: AbortSignal,
  ): Promise<CreateMessageResult> {
    return this.routed<CreateMessageResult>(conn, signal, (answer, refuse) => ({
      method: 'sampling/createMessage',
      params,
      answer,
      refuse,
    }));
  }

  private routed<T>(
    conn: McpConnection | undefined,
    signal: AbortSignal,
    question: (answer: (v: T) => void, refuse: (err: Error) => void) => PushedQuestion,
  ): Promise<T> {
    const calls = conn === undefined ? undefined : this.active.get(conn);
    if (calls === undefined || calls.size !== 1)
      return Promise.reject(new Error('the connector cannot tell which of the calls in flight asks this question'));
    const [channel] = calls;
    return new Promise<T>((resolve, reject) => {
      if (signal.aborted) return reject(new Error('the request was abandoned'));
      signal.addEventListener('abort', () => reject(new Error('the request was abandoned')), { once: true });
      channel!.push(question(resolve, reject));
    });
  }

  /** Holds a call under its input request id until it is re-sent or the server's call ends. */
  park(id: string, call: ParkedCall): void {
    this.parked.set(id, call);
    const drop = (): void => {
      if (this.parked.get(id) === call) this.parked.delete(id);
    };
    call.result.then(drop, drop);
  }

  take(id: string): ParkedCall | undefined {
    const call = this.parked.get(id);
    this.parked.delete(id);
    return call;
  }

  get parkedCount(): number {
    return this.parked.size;
  }
}
