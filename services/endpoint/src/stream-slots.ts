import type { AgentTokens, TokenEnd, TokenGrant } from './agent-tokens.js';

/** The bounds on open notification streams (legacy GET and `subscriptions/listen` together). */
export interface StreamLimits {
  /** `ENDPOINT_STREAMS_PER_TOKEN`: streams one token holds open on one instance. */
  perToken: number;
  /** `ENDPOINT_STREAMS_PER_ACCOUNT`: streams all tokens of one account hold open on one instance. */
  perAccount: number;
  /** `ENDPOINT_STREAMS_PER_INSTANCE`: streams one instance holds open (each holds a socket). */
  perInstance: number;
}

/** The limit a refused stream met (named in the refusal and counted as its outcome). */
export type StreamLimit = 'streams_per_token' | 'streams_per_account' | 'streams_per_instance';

/** A refused stream, as http.ts says it: the limit, its value, and when to try again. */
export interface StreamRefusal {
  status: 429 | 503;
  message: string;
  retryAfterSeconds: number;
  data: {
    code: 'rate_limited';
    details: { field: 'authorization'; limit: StreamLimit; max: number; retryAfterMs: number };
  };
}

/** A full slot frees when a stream ends, which a client decides: a few seconds is a fair guess. */
const RETRY_AFTER_SECONDS = 5;
const SSE = /^text\/event-stream\b/i;

function bump(counts: Map<string, number>, key: string, by: 1 | -1): void {
  const n = (counts.get(key) ?? 0) + by;
  if (n <= 0) counts.delete(key);
  else counts.set(key, n);
}

/**
 * The open notification streams of one instance, counted per token, per account and in all, so
 * that no party takes the slots everyone shares: a stream past a bound is refused before it
 * opens. A stream holds its slot until it ends, and ends (its slot freed) when its token stops
 * granting: revoked (on any instance: the registry's notice) or expired (`AgentTokens.watch`).
 */
export class StreamSlots {
  private total = 0;
  private readonly byToken = new Map<string, number>();
  private readonly byAccount = new Map<string, number>();

  constructor(
    private readonly limits: StreamLimits,
    private readonly tokens: Pick<AgentTokens, 'watch'>,
    /** Told of each stream its token's end closed (a metric). */
    private readonly onEnded: (why: TokenEnd) => void = () => {},
  ) {}

  /**
   * A slot for one stream of `grant`, or the refusal naming the full limit. Taken at once after
   * the token is verified (no await between), so a revocation is not missed meanwhile.
   */
  take(grant: TokenGrant): StreamSlot | StreamRefusal {
    const limit = this.full(grant);
    if (limit !== undefined) return this.refusal(limit);
    this.total++;
    bump(this.byToken, grant.id, 1);
    bump(this.byAccount, grant.account, 1);
    let freed = false;
    const free = (): void => {
      if (freed) return;
      freed = true;
      this.total--;
      bump(this.byToken, grant.id, -1);
      bump(this.byAccount, grant.account, -1);
    };
    return new StreamSlot(free, (ended) => this.tokens.watch(grant, ended), this.onEnded);
  }

  private full(grant: TokenGrant): StreamLimit | undefined {
    if ((this.byToken.get(grant.id) ?? 0) >= this.limits.perToken) return 'streams_per_token';
    if ((this.byAccount.get(grant.account) ?? 0) >= this.limits.perAccount) return 'streams_per_account';
    if (this.total >= this.limits.perInstance) return 'streams_per_instance';
    return undefined;
  }

  private refusal(limit: StreamLimit): StreamRefusal {
    const max =
      limit === 'streams_per_token'
        ? this.limits.perToken
        : limit === 'streams_per_account'
          ? this.limits.perAccount
          : this.limits.perInstance;
    const whose =
      limit === 'streams_per_token'
        ? 'this token'
        : limit === 'streams_per_account'
          ? "this token's account"
          : 'this instance';
    return {
      // The instance's own bound is not the client's doing: 503, as for any full instance.
      status: limit === 'streams_per_instance' ? 503 : 429,
      message: `Too many requests: ${whose} holds ${max} open notification streams (${limit}); close one or retry later`,
      retryAfterSeconds: RETRY_AFTER_SECONDS,
      data: {
        code: 'rate_limited',
        details: { field: 'authorization', limit, max, retryAfterMs: RETRY_AFTER_SECONDS * 1000 },
      },
    };
  }
}

/** One taken slot: `hold` gives the stream that keeps it; anything else frees it. */
export class StreamSlot {
  private ended: TokenEnd | undefined;
  private stop: (() => void) | undefined;
  private readonly unwatch: () => void;

  constructor(
    private readonly free: () => void,
    watch: (ended: (why: TokenEnd) => void) => () => void,
    private readonly onEnded: (why: TokenEnd) => void,
  ) {
    this.unwatch = watch((why) => {
      this.ended = why;
      this.onEnded(why);
      this.stop?.();
    });
  }

  private onEnd: (() => void) | undefined;

  /** Frees the slot (the stream did not open, or ended), and what the stream held (`hold`'s `onEnd`). */
  release(): void {
    this.unwatch();
    this.free();
    const end = this.onEnd;
    this.onEnd = undefined;
    end?.();
  }

  /**
   * The response's SSE body, holding the slot until it ends; closed (a last comment saying why)
   * when the token stops granting. A response that is not a stream (a refusal, an error) frees
   * the slot at once. `onEnd` runs once when the slot is freed (the stream's subscriptions go).
   */
  hold(res: Response, onEnd?: () => void): Response {
    this.onEnd = onEnd;
    const source = res.body;
    if (source === null || !SSE.test(res.headers.get('content-type') ?? '')) {
      this.release();
      return res;
    }
    const reader = source.getReader();
    const enc = new TextEncoder();
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.stop = () => {
          try {
            controller.enqueue(enc.encode(`: token ${this.ended ?? 'revoked'}\n\n`));
            controller.close();
          } catch {
            // already closed
          }
          reader.cancel().catch(() => undefined);
          this.release();
        };
        if (this.ended !== undefined) this.stop();
      },
      pull: async (controller) => {
        const chunk = await reader.read().catch(() => ({ done: true as const, value: undefined }));
        if (!chunk.done) {
          controller.enqueue(chunk.value);
          return;
        }
        this.release();
        try {
          controller.close();
        } catch {
          // closed by stop meanwhile
        }
      },
      cancel: (reason) => {
        this.release();
        return reader.cancel(reason);
      },
    });
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  }
}
