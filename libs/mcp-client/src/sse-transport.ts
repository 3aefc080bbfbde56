import {
  SdkError,
  SdkErrorCode,
  SSEClientTransport,
  type FetchLike,
  type JSONRPCMessage,
  type SSEClientTransportOptions,
  type Transport,
  type TransportSendOptions,
} from '@modelcontextprotocol/client';
import { McpClientError, McpClientErrorCode, McpClientRan, networkCause, RESPONSE_TOO_LARGE, scrub } from './errors.js';
import { isEventStream } from './session-stream.js';

/**
 * How a legacy SSE session's event stream ended under a started transport: `cut` at a bound of
 * the connection's fetch (the error naming it), `broke` (the read failed: a reset socket, a dead
 * server), or `ended` (the server closed it).
 */
export type SseStreamEnd =
  | { kind: 'cut'; cut: Error & { details?: { bound?: { name: string; limit: number } } } }
  | { kind: 'broke'; cause: unknown }
  | { kind: 'ended' };

/**
 * The SDK's legacy SSE client transport, with two additions.
 *
 * The per-message `headers` of a request's options (`TransportSendOptions.headers`, which the
 * SDK's SSE transport ignores) go on that message's POST: a request that carries its caller's
 * trace context (`traceparent`, `tracestate`) sends it in its HTTP headers, as on Streamable
 * HTTP. The SDK builds each POST itself (its own headers, after an await), so the headers are
 * found by the POST's body: the message as the SDK serialises it (`JSON.stringify`), unique while
 * it is sent (a request's id is). Concurrent requests on one connection each find their own; a
 * message sent without headers costs nothing more.
 *
 * The session's event stream (the GET, which carries every answer) ending once the session is
 * started ends the session at once, whatever ended it: a cut at a bound of the fetch, a read that
 * failed (a reset socket, a server that died), or the server closing it. The transport closes,
 * so every request waiting for an answer fails now ({@link sseStreamFailure} says why) instead of
 * at its timeout, and the SDK does not reopen the stream: a new stream is a new session on the
 * server (an SDK server's session is its stream), where the old requests' answers never come and
 * no `initialize` was made. The connection's owner replaces the closed connection.
 */
export class HeaderedSseTransport extends SSEClientTransport {
  readonly #byBody: Map<string, Readonly<Record<string, string>>>;
  #started = false;
  #closing = false;
  #end: SseStreamEnd | undefined;

  constructor(url: URL, opts: SSEClientTransportOptions = {}) {
    const byBody = new Map<string, Readonly<Record<string, string>>>();
    let onEnd: (end: SseStreamEnd) => void = () => {};
    const watched = watchingEventStreams(opts.fetch ?? fetch, (end) => onEnd(end));
    super(url, { ...opts, fetch: withMessageHeaders(watched, byBody) });
    this.#byBody = byBody;
    onEnd = (end) => this.#streamEnded(end);
  }

  /** How the session's event stream ended (and so closed the transport), if it did. */
  get streamEnd(): SseStreamEnd | undefined {
    return this.#end;
  }

  override async start(): Promise<void> {
    await super.start();
    // Before the session's endpoint came, the SDK's event source reconnects on its own and the
    // connect fails on its error; from here an ended stream is a lost session.
    this.#started = true;
  }

  override async close(): Promise<void> {
    this.#closing = true;
    await super.close();
  }

  override async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    const headers = options?.headers;
    if (headers === undefined || Object.keys(headers).length === 0) return await super.send(message);
    const body = JSON.stringify(message);
    this.#byBody.set(body, headers);
    try {
      await super.send(message);
    } finally {
      this.#byBody.delete(body);
    }
  }

  #streamEnded(end: SseStreamEnd): void {
    if (!this.#started || this.#closing || this.#end !== undefined) return;
    this.#end = end;
    // The SDK's Protocol fails every pending request with "connection closed" on this close.
    void this.close().catch(() => {});
  }
}

/**
 * The failure of a request on `transport` that failed with `err`, when `err` is the close that
 * the end of the session's event stream caused ({@link HeaderedSseTransport}): its answer was lost
 * with the stream, and the server may have run it (`transport_error`, `ran: maybe`). A cut names
 * the bound (its cause is the cut's own error, `details.bound` the bound); a broken stream its
 * network cause. `undefined` otherwise (a request made after the close fails as not sent).
 */
export function sseStreamFailure(
  transport: Transport,
  err: unknown,
  secrets: readonly string[] = [],
): McpClientError | undefined {
  if (!(transport instanceof HeaderedSseTransport)) return undefined;
  const end = transport.streamEnd;
  if (end === undefined || !(err instanceof SdkError) || err.code !== SdkErrorCode.ConnectionClosed) return undefined;
  const lost = 'and with it the answer (the server may have executed the request)';
  switch (end.kind) {
    case 'cut': {
      const bound = boundOf(end.cut);
      return new McpClientError(
        McpClientErrorCode.TransportError,
        `MCP session's event stream was cut, ${lost}: ${end.cut.message}`,
        { transport: 'sse', ran: McpClientRan.Maybe, ...(bound !== undefined ? { bound } : {}) },
        { cause: end.cut },
      );
    }
    case 'broke':
      return new McpClientError(
        McpClientErrorCode.TransportError,
        `MCP session's event stream broke, ${lost}: ${scrub(networkCause(end.cause) ?? String(end.cause), secrets)}`,
        { transport: 'sse', ran: McpClientRan.Maybe },
        { cause: end.cause },
      );
    case 'ended':
      return new McpClientError(
        McpClientErrorCode.TransportError,
        `MCP session's event stream was closed by the server, ${lost}`,
        { transport: 'sse', ran: McpClientRan.Maybe },
        { cause: err },
      );
  }
}

/** The bound a cut names (`details.bound` of the fetch's error), when it is well-formed. */
function boundOf(cut: Error & { details?: { bound?: unknown } }): { name: string; limit: number } | undefined {
  const bound = cut.details?.bound as { name?: unknown; limit?: unknown } | undefined;
  return typeof bound?.name === 'string' && typeof bound.limit === 'number'
    ? { name: bound.name, limit: bound.limit }
    : undefined;
}

/** `base`, adding to a POST the headers registered for its body (never over one the SDK set). */
function withMessageHeaders(base: FetchLike, byBody: Map<string, Readonly<Record<string, string>>>): FetchLike {
  return (url, init) => {
    const body = init?.body;
    const extra = byBody.size === 0 || typeof body !== 'string' ? undefined : byBody.get(body);
    if (extra === undefined) return base(url, init);
    const headers = new Headers(init?.headers);
    for (const [name, value] of Object.entries(extra)) if (!headers.has(name)) headers.set(name, value);
    return base(url, { ...init, headers });
  };
}

/** `base`, with each event stream a GET opens telling `onEnd` how it ended. */
function watchingEventStreams(base: FetchLike, onEnd: (end: SseStreamEnd) => void): FetchLike {
  return async (url, init) => {
    const response = await base(url, init);
    if ((init?.method ?? 'GET').toUpperCase() !== 'GET' || response.body === null || !isEventStream(response))
      return response;
    return withEndWatch(response, onEnd);
  };
}

/** The error with code {@link RESPONSE_TOO_LARGE} in `err` or its causes (fetch wraps a body's error). */
function cutOf(err: unknown): Error | undefined {
  let current = err;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    if ((current as { code?: unknown }).code === RESPONSE_TOO_LARGE) return current;
    current = current.cause;
  }
  return undefined;
}

/**
 * `response` with a body that tells `onEnd` how it ended (before the reader hears of it): cut at
 * a bound, broken, or ended by the server. A cancel by the reader (the transport's own close) is
 * not an end it reports.
 */
function withEndWatch(response: Response, onEnd: (end: SseStreamEnd) => void): Response {
  const reader = response.body!.getReader();
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        let next: Awaited<ReturnType<typeof reader.read>>;
        try {
          next = await reader.read();
        } catch (error) {
          const cut = cutOf(error);
          onEnd(cut !== undefined ? { kind: 'cut', cut } : { kind: 'broke', cause: error });
          settle(() => controller.error(error));
          return;
        }
        if (!next.done) {
          controller.enqueue(next.value);
          return;
        }
        onEnd({ kind: 'ended' });
        settle(() => controller.close());
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  );
  const out = new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
  // What a constructed Response cannot be given: the SDK and the event source read where it came from.
  Object.defineProperty(out, 'url', { value: response.url });
  Object.defineProperty(out, 'redirected', { value: response.redirected });
  return out;
}

/** Runs `fn`, a stream controller's close or error, which throws when the reader already cancelled the stream. */
function settle(fn: () => void): void {
  try {
    fn();
  } catch {
    // The transport closed on the end it was just told of, and cancelled the stream.
  }
}
