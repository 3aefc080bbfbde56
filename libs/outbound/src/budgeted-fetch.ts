import type { BodyStop } from './bounded-body.js';
import { boundResponse, type Bounding } from './bounded-response.js';
import { ByteBudget } from './byte-meter.js';
import { OutboundError } from './errors.js';
import { assertPositiveBytes } from './response-bounds.js';

export interface BudgetedFetchOptions {
  /** Decompressed bytes of all the response bodies read through this fetch together. */
  maxTotalBytes: number;
  /** Total time from creation: then requests under way fail and open bodies are cut. */
  deadlineMs?: number;
  /** Told of every body cut at the budget or the deadline. */
  onCut?: (err: OutboundError) => void;
}

/**
 * A fetch with a total budget; `end()` stops its deadline timer. Only the fetch: a `request`
 * function the base may carry is not carried over (nothing reads one off a fetch).
 */
export type BudgetedFetch = typeof fetch & { budget: ByteBudget; end(): void };

function urlOf(input: string | URL | Request): URL | undefined {
  try {
    return new URL(typeof input === 'string' || input instanceof URL ? String(input) : input.url);
  } catch {
    return undefined;
  }
}

/**
 * Wraps `base` (an outbound fetch, possibly wrapped again, e.g. for tracing) for one exchange
 * with a remote server — one discovery: every body read through it counts against one total of
 * `maxTotalBytes`, and after `deadlineMs` every request fails and every open body is cut, with an
 * `OutboundError` naming `maxTotalBytes` or `deadlineMs`. The per-response bounds stay the base's.
 * A body that answers a POST with an event stream ends, when cut, with stand-in JSON-RPC errors
 * (as in `boundResponse`), so a pending MCP request fails at once with the bound's message.
 */
export function budgetedFetch(base: typeof fetch, opts: BudgetedFetchOptions): BudgetedFetch {
  assertPositiveBytes('maxTotalBytes', opts.maxTotalBytes);
  if (opts.deadlineMs !== undefined && (!Number.isSafeInteger(opts.deadlineMs) || opts.deadlineMs <= 0)) {
    throw new TypeError('outbound bound deadlineMs must be a positive integer number of milliseconds');
  }
  const budget = new ByteBudget(opts.maxTotalBytes);
  const deadline = new AbortController();
  // The origin named by a deadline error: this fetch talks to one server.
  let lastUrl: URL | undefined;
  const deadlineError = (): OutboundError =>
    OutboundError.deadline(opts.deadlineMs ?? 0, lastUrl ?? new URL('about:blank'));
  const timer =
    opts.deadlineMs === undefined
      ? undefined
      : setTimeout(() => {
          deadline.abort(deadlineError());
        }, opts.deadlineMs);
  timer?.unref();
  const stop: BodyStop | undefined =
    timer === undefined ? undefined : { signal: deadline.signal, error: deadlineError };
  const onCut = opts.onCut;
  const bounding: Bounding = {
    budget,
    ...(stop ? { stop } : {}),
    ...(onCut === undefined
      ? {}
      : {
          onCut: (err: OutboundError) => {
            try {
              onCut(err);
            } catch {
              // An observer's failure must not change what the caller sees.
            }
          },
        }),
  };
  const signalFor = (given: AbortSignal | null | undefined): AbortSignal | undefined =>
    stop === undefined ? (given ?? undefined) : given ? AbortSignal.any([given, deadline.signal]) : deadline.signal;

  const budgeted = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = urlOf(input);
    if (url !== undefined) lastUrl = url;
    if (deadline.signal.aborted) throw deadlineError();
    const signal = signalFor(init?.signal ?? (input instanceof Request ? input.signal : undefined));
    let response: Response;
    try {
      response = await base(input, { ...init, ...(signal ? { signal } : {}) });
    } catch (err) {
      // An abort by the deadline (not by the caller's own signal) is the deadline's error.
      if (deadline.signal.aborted && !(init?.signal?.aborted ?? false)) throw deadlineError();
      throw err;
    }
    const method = init?.method ?? (input instanceof Request ? input.method : 'GET');
    return boundResponse(response, { url: url ?? new URL('about:blank'), method, body: init?.body }, bounding);
  };

  const out: BudgetedFetch = Object.assign(budgeted, {
    budget,
    end: () => {
      if (timer !== undefined) clearTimeout(timer);
    },
  });
  return out;
}
