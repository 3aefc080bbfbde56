import { randomUUID } from 'node:crypto';
import { listen, notify, payload, request, serve } from '@mcpx/bus';
import {
  NatsFailures,
  decodeClientDeclared,
  decodeForwardedAnswer,
  encodePayload,
  forwardedAnswerReplyValue,
  natsFailure,
  type ClientDeclared,
  type ForwardedAnswer,
} from '@mcpx/contracts';
import type { Subscription } from '@nats-io/transport-node';
import type { SharedTokenStateDeps } from './shared-token-state.js';

/** What a 2025 client of a token declared in its `initialize`: whether it answers forms, opens URL questions, and samples. */
export interface Declared {
  elicitation: boolean;
  sampling: boolean;
  elicitationUrl?: boolean;
}

type Json = Record<string, unknown>;

const NOTHING_DECLARED: Declared = { elicitation: false, sampling: false };
/** How a question's JSON-RPC id starts: `mcpx-q.<instance>.<uuid>` names the instance that holds its call. */
const QUESTION_PREFIX = 'mcpx-q.';
const QUESTION_ID_RE = /^mcpx-q\.([A-Za-z0-9_-]{1,128})\.[0-9a-f-]{36}$/;
/** How long another instance may take to say whether it took an answer. */
const FORWARD_TIMEOUT_MS = 2_000;
/** What a 2025 client declared is kept this long in Redis after its last `initialize`. */
const DECLARED_TTL_S = 24 * 60 * 60;
/** Tokens whose clients' declarations an instance keeps in memory. */
const MAX_REMEMBERED = 50_000;
/** An answer forwarded between instances is at most this large (the lean path reads 256 KiB bodies). */
const MAX_FORWARDED_BYTES = 300 * 1024;

/** `endpointAnswer(<instance>)` and `endpointClientsDeclared` of the stack's subjects are these instances'. */
export type LegacyClientsDeps = SharedTokenStateDeps;

function isObject(v: unknown): v is Json {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * What makes a 2025 client's conversation independent of which endpoint instance a balancer sends
 * each of its POSTs to (stateless serving, no affinity):
 * - what the client declared in its `initialize` (whether it answers forms and sampling) is
 *   written to Redis before the `initialize` is answered and announced to the other instances, so
 *   the instance that serves its call knows it;
 * - a question asked on a call's stream carries the asking instance in its id, and the client's
 *   answer, posted wherever, is forwarded over NATS to that instance, which checks that the
 *   answering token is the one it asked before it takes it.
 */
export class LegacyClients {
  private readonly known = new Map<string, Declared>();
  private readonly subs: Subscription[] = [];

  constructor(private readonly deps: LegacyClientsDeps) {}

  /** A new question's JSON-RPC id, naming this instance. */
  questionId(): string {
    return `${QUESTION_PREFIX}${this.deps.instance}.${randomUUID()}`;
  }

  /**
   * Starts hearing the other instances: answers to this instance's questions (`take` says whether
   * the question was this token's and waiting) and what clients declared elsewhere.
   */
  listen(take: (tokenId: string, id: string, result: Json | undefined) => boolean): void {
    const { nc, subjects, instance, log } = this.deps;
    this.subs.push(
      serve(
        nc,
        subjects.endpointAnswer(instance),
        instance,
        { decode: decodeForwardedAnswer, handle: (a) => Promise.resolve({ taken: take(a.token, a.id, a.result) }) },
        log,
      ),
      listen(
        nc,
        subjects.endpointClientsDeclared,
        payload(decodeClientDeclared),
        (m) => {
          if (m.instance !== instance)
            this.keep(m.token, {
              elicitation: m.elicitation,
              sampling: m.sampling,
              elicitationUrl: m.elicitationUrl === true,
            });
        },
        { what: 'declared capabilities of a 2025 client', log },
      ),
    );
  }

  /**
   * Hands an answer to the instance that asked the question, when that is another one; whether it
   * took it. An instance gone, slow or unknown: not taken (the call there ends as unanswered).
   */
  async forward(tokenId: string, id: string, result: Json | undefined): Promise<boolean> {
    const holder = QUESTION_ID_RE.exec(id)?.[1];
    if (holder === undefined || holder === this.deps.instance) return false;
    const forwarded: ForwardedAnswer = { token: tokenId, id, ...(result !== undefined ? { result } : {}) };
    try {
      // Bounded before it goes (the bus encodes it again: an answer is small, this is its cap).
      if (encodePayload(forwarded).length > MAX_FORWARDED_BYTES) return false;
      const reply = await request(
        this.deps.nc,
        this.deps.subjects.endpointAnswer(holder),
        forwarded,
        forwardedAnswerReplyValue,
        FORWARD_TIMEOUT_MS,
      );
      return reply.taken;
    } catch (err) {
      // No such instance (gone, or an id a client made up): said by NATS at once, not worth a line.
      if (natsFailure(err) !== NatsFailures.noResponders)
        this.deps.log.warn('answer of a 2025 client not handed to the instance that asked', {
          err: err as Error,
          instance: holder,
        });
      return false;
    }
  }

  /** What the token's 2025 client declared: known here, else from Redis (nothing when neither says). */
  async declared(tokenId: string): Promise<Declared> {
    const hit = this.known.get(tokenId);
    if (hit !== undefined) return hit;
    let found: Declared = NOTHING_DECLARED;
    try {
      const raw = await this.deps.redis.get(this.key(tokenId));
      if (raw !== null) {
        const m = JSON.parse(raw) as unknown;
        if (isObject(m))
          found = {
            elicitation: m.elicitation === true,
            sampling: m.sampling === true,
            elicitationUrl: m.elicitationUrl === true,
          };
      }
    } catch (err) {
      // Redis unreachable: the call goes on as for a client that declared nothing (it is not asked).
      this.deps.log.warn('declared capabilities of a 2025 client not read', { err: err as Error });
      return found;
    }
    this.keep(tokenId, found);
    return found;
  }

  /** Records a 2025 client's `initialize` (the last one of a token wins), here, in Redis and for the other instances. */
  async remember(tokenId: string, declared: Declared): Promise<void> {
    this.keep(tokenId, declared);
    const text = JSON.stringify(declared);
    try {
      await this.deps.redis.set(this.key(tokenId), text, 'EX', DECLARED_TTL_S);
    } catch (err) {
      this.deps.log.warn('declared capabilities of a 2025 client not shared through redis', { err: err as Error });
    }
    notify<ClientDeclared>(this.deps.nc, this.deps.subjects.endpointClientsDeclared, {
      instance: this.deps.instance,
      token: tokenId,
      ...declared,
    });
  }

  private keep(tokenId: string, declared: Declared): void {
    this.known.delete(tokenId);
    this.known.set(tokenId, declared);
    if (this.known.size > MAX_REMEMBERED) this.known.delete(this.known.keys().next().value as string);
  }

  private key(tokenId: string): string {
    return `${this.deps.redisPrefix}endpoint:declared:${tokenId}`;
  }

  close(): void {
    for (const s of this.subs.splice(0)) s.unsubscribe();
  }
}
