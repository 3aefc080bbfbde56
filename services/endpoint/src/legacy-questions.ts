import type { ServerResponse } from 'node:http';
import type { InputRequiredResult } from '@modelcontextprotocol/server';
import type { TokenGrant } from './agent-tokens.js';
import type { Declared, LegacyClients } from './legacy-clients.js';
import { isObject, type Json } from './lean-requests.js';
import { declaresForms, declaresUrl } from './tool-calls.js';

/** A 2025 client's answer to a question asked during its call is awaited this long at most. */
const LEGACY_ANSWER_MS = 5 * 60_000;
/** Questions asked of 2025 clients and not answered yet, per instance (each holds a call open). */
const MAX_PENDING_QUESTIONS = 1_000;

/**
 * The questions of 2025 clients' calls (./lean-calls.ts): what the SDK's stateless serving cannot
 * do. A client that declared elicitation (or sampling) in its initialize is asked its call's
 * questions (an approval its token's user may give, a server's form) as server-to-client requests
 * on the call's SSE stream; its answer, a POST of the JSON-RPC response, reaches the instance that
 * asked wherever it was posted ({@link LegacyClients}).
 */
export class LegacyQuestions {
  /** Questions asked of 2025 clients, by their JSON-RPC id: the token they were asked of and the answer's resolver. */
  private readonly questions = new Map<string, { tokenId: string; resolve: (answer: Json | undefined) => void }>();

  constructor(private readonly clients: LegacyClients) {
    clients.listen((tokenId, id, result) => this.take(tokenId, id, result));
  }

  /**
   * The questions of one round as server-to-client requests on the call's SSE stream, and their
   * answers by key; a question the client did not declare it can answer, or did not answer in
   * time, is answered `cancel` for it (an approval then waits for the owner).
   */
  async ask(
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
        const id = this.clients.questionId();
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
  async answered(
    msg: Json,
    grant: TokenGrant,
    res: ServerResponse,
    cors: Record<string, string> = {},
  ): Promise<boolean> {
    if (msg.method !== undefined || typeof msg.id !== 'string' || msg.jsonrpc !== '2.0') return false;
    // An error answer (the client cannot do it after all) is no answer.
    const result = isObject(msg.result) ? msg.result : undefined;
    if (!this.take(grant.id, msg.id, result) && !(await this.clients.forward(grant.id, msg.id, result))) return false;
    res.writeHead(202, cors);
    res.end();
    return true;
  }

  /** Resolves a question of this instance with its answer, if it was asked of this token and still waits. */
  take(tokenId: string, id: string, result: Json | undefined): boolean {
    const q = this.questions.get(id);
    if (q === undefined || q.tokenId !== tokenId) return false;
    this.questions.delete(id);
    q.resolve(result);
    return true;
  }

  async rememberInitialize(grant: TokenGrant, msg: Json): Promise<void> {
    const caps = isObject(msg.params) && isObject(msg.params.capabilities) ? msg.params.capabilities : {};
    await this.clients.remember(grant.id, {
      elicitation: declaresForms(caps.elicitation),
      sampling: caps.sampling !== undefined,
      elicitationUrl: declaresUrl(caps.elicitation),
    });
  }

  /** Stops the questions waiting (the service is stopping): each is answered as not answered. */
  close(): void {
    this.clients.close();
    for (const q of this.questions.values()) q.resolve(undefined);
    this.questions.clear();
  }
}
