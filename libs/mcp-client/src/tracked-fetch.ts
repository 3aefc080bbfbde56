import { isEventStream, opensSessionStream, type SessionStream } from './session-stream.js';

/** What the connection's fetch saw last: lets errors name a 401 challenge or a socket error. */
export interface FetchObservations {
  /** `WWW-Authenticate` of the last 401 response. */
  wwwAuthenticate?: string;
  /** Status of the last non-2xx response. */
  lastErrorStatus?: number;
  /** The last error thrown by the underlying fetch (network failure). */
  lastNetworkError?: unknown;
  /**
   * The start of the last 4xx/5xx body: the SDK's probe reports a failed `server/discover` by
   * status only, and the server's own words are what an owner needs. Scrubbed before use.
   */
  lastErrorBody?: Promise<string>;
  /**
   * The JSON-RPC answer to a `server/discover` probe sent as a JSON body: the SDK falls back to
   * `initialize` on a discover result it cannot read, and a server that answers the probe with
   * garbage must get a typed error, not be taken for a legacy server.
   */
  discoverAnswer?: Promise<unknown>;
}

/** A probe answer larger than this is not read for the check (the SDK bounds its own reading). */
const DISCOVER_ANSWER_MAX_CHARS = 64 * 1024;

/** Characters of an error body kept for a message. */
const ERROR_BODY_CHARS = 300;

// Responses that cannot be re-wrapped with a body, and redirects (whose `url` the SDK reads).
const PASS_THROUGH_STATUSES = new Set([101, 204, 205, 301, 302, 303, 304, 307, 308]);

/**
 * Wraps `baseFetch` for one MCP connection.
 *
 * The SDK transports pass one long-lived AbortSignal to every request. undici adds an abort
 * listener to that signal per request and removes it only when the request is garbage collected,
 * so under load it floods `MaxListenersExceededWarning` (raising the limit does not help: undici
 * resets it). Here each request gets its own AbortController, registered with the shared signal
 * (one listener per shared signal) and released as soon as its response body is finished,
 * cancelled or failed.
 *
 * `stream`: told when a legacy session's own GET event stream opens and ends (see
 * {@link SessionStream}).
 */
export function trackedFetch(
  baseFetch: typeof fetch,
  observations: FetchObservations,
  stream?: SessionStream,
): typeof fetch {
  return async (input, init) => {
    const shared = init?.signal ?? undefined;
    const controller = new AbortController();
    const unlink = shared ? link(shared, controller) : () => {};
    let response: Response;
    try {
      response = await baseFetch(input, { ...init, signal: controller.signal });
    } catch (error) {
      unlink();
      observations.lastNetworkError = error;
      throw error;
    }
    if (
      response.ok &&
      typeof init?.body === 'string' &&
      init.body.includes('"server/discover"') &&
      (response.headers.get('content-type') ?? '').includes('application/json')
    ) {
      observations.discoverAnswer = jsonStart(response.clone());
    }
    if (!response.ok) {
      observations.lastErrorStatus = response.status;
      if (response.status >= 400 && response.body !== null)
        observations.lastErrorBody = errorBodyStart(response.clone());
      if (response.status === 401) {
        const challenge = response.headers.get('www-authenticate');
        if (challenge !== null) observations.wwwAuthenticate = challenge;
      }
    }
    const ended =
      stream !== undefined && response.body !== null && opensSessionStream(init) && isEventStream(response)
        ? stream.opened()
        : undefined;
    const release = (): void => {
      unlink();
      ended?.();
    };
    if ((!shared && ended === undefined) || !response.body || PASS_THROUGH_STATUSES.has(response.status)) {
      release();
      return response;
    }
    return withReleasingBody(response, release);
  };
}

/** A small JSON body, parsed; `undefined` when it is too large or not JSON. */
async function jsonStart(copy: Response): Promise<unknown> {
  const text = await bodyStart(copy, DISCOVER_ANSWER_MAX_CHARS + 1);
  if (text.length > DISCOVER_ANSWER_MAX_CHARS) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The first characters of an error body (the clone is cancelled after them). */
async function errorBodyStart(copy: Response): Promise<string> {
  return (await bodyStart(copy, ERROR_BODY_CHARS)).slice(0, ERROR_BODY_CHARS);
}

/** Up to about `chars` characters of a body copy (the copy is cancelled after them). */
async function bodyStart(copy: Response, chars: number): Promise<string> {
  const reader = copy.body?.getReader();
  if (reader === undefined) return '';
  const decoder = new TextDecoder();
  let text = '';
  try {
    while (text.length < chars) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
  } catch {
    // A body that breaks off says what it said so far.
  } finally {
    void reader.cancel().catch(() => {});
  }
  return text;
}

/** `response` with a body stream that calls `release` once it is done, cancelled or failed. */
function withReleasingBody(response: Response, release: () => void): Response {
  const source = response.body;
  if (!source) {
    release();
    return response;
  }
  const reader = source.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) {
          release();
          controller.close();
        } else {
          controller.enqueue(value);
        }
      } catch (error) {
        release();
        controller.error(error);
      }
    },
    async cancel(reason) {
      release();
      await reader.cancel(reason);
    },
  });
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}

const linked = new WeakMap<AbortSignal, Set<AbortController>>();

/** Aborts `controller` with `shared`; returns the release function (idempotent). */
function link(shared: AbortSignal, controller: AbortController): () => void {
  if (shared.aborted) {
    controller.abort(shared.reason);
    return () => {};
  }
  let controllers = linked.get(shared);
  if (!controllers) {
    const set = new Set<AbortController>();
    controllers = set;
    linked.set(shared, set);
    shared.addEventListener(
      'abort',
      () => {
        for (const c of set) c.abort(shared.reason);
        set.clear();
      },
      { once: true },
    );
  }
  const set = controllers;
  set.add(controller);
  return () => {
    set.delete(controller);
  };
}
