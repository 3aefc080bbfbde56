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
import { McpClientError, McpClientErrorCode, McpClientRan } from './errors.js';
import { isEventStream } from './session-stream.js';

/**
 * The stable `code` of the error a body cut at a bound of the connection's fetch errors with
 * (`@mcpx/outbound`'s `OutboundErrorCode.responseTooLarge`): decided by code, as that library
 * is not a dependency of this one.
 */
const RESPONSE_TOO_LARGE = 'response_too_large';

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
 * The session's event stream (the GET, which carries every answer) cut at a bound of the fetch
 * ends the session at once: the transport closes, so every request waiting for an answer fails
 * now ({@link sseCutFailure} says why) instead of at its timeout, and the SDK does not reopen
 * the stream (a new stream is a new session on the server, where the old requests' answers never
 * come).
 */
export class HeaderedSseTransport extends SSEClientTransport {
  readonly #byBody: Map<string, Readonly<Record<string, string>>>;
  #cut: Error | undefined;

  constructor(url: URL, opts: SSEClientTransportOptions = {}) {
    const byBody = new Map<string, Readonly<Record<string, string>>>();
    let onCut: (cut: Error) => void = () => {};
    const watched = watchingEventStreams(opts.fetch ?? fetch, (cut) => onCut(cut));
    super(url, { ...opts, fetch: withMessageHeaders(watched, byBody) });
    this.#byBody = byBody;
    onCut = (cut) => this.#streamCut(cut);
  }

  /** The error that cut the session's event stream (and so closed the transport), if one did. */
  get cut(): Error | undefined {
    return this.#cut;
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

  #streamCut(cut: Error): void {
    if (this.#cut !== undefined) return;
    this.#cut = cut;
    // The SDK's Protocol fails every pending request with "connection closed" on this close.
    void this.close().catch(() => {});
  }
}

/**
 * The failure of a request on `transport` that failed with `err`, when `err` is the close that a
 * cut of the session's event stream caused: its answer was lost on the cut stream, and the server
 * may have run it. Its cause is the cut's own error (the bound it passed). `undefined` otherwise.
 */
export function sseCutFailure(transport: Transport, err: unknown): McpClientError | undefined {
  if (!(transport instanceof HeaderedSseTransport) || transport.cut === undefined) return undefined;
  if (!(err instanceof SdkError) || err.code !== SdkErrorCode.ConnectionClosed) return undefined;
  return new McpClientError(
    McpClientErrorCode.TransportError,
    `MCP session's event stream was cut, and with it the answer (the server may have executed the request): ${transport.cut.message}`,
    { transport: 'sse', ran: McpClientRan.Maybe },
    { cause: transport.cut },
  );
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

/** `base`, with each event stream a GET opens telling `onCut` when a bound of the fetch cut it. */
function watchingEventStreams(base: FetchLike, onCut: (cut: Error) => void): FetchLike {
  return async (url, init) => {
    const response = await base(url, init);
    if ((init?.method ?? 'GET').toUpperCase() !== 'GET' || response.body === null || !isEventStream(response))
      return response;
    return withCutWatch(response, onCut);
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

/** `response` with a body that calls `onCut` (before the reader hears of it) when the body is cut at a bound. */
function withCutWatch(response: Response, onCut: (cut: Error) => void): Response {
  const reader = response.body!.getReader();
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        let next: Awaited<ReturnType<typeof reader.read>>;
        try {
          next = await reader.read();
        } catch (error) {
          const cut = cutOf(error);
          if (cut !== undefined) onCut(cut);
          controller.error(error);
          return;
        }
        if (next.done) controller.close();
        else controller.enqueue(next.value);
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
