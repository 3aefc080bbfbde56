import {
  SSEClientTransport,
  type FetchLike,
  type JSONRPCMessage,
  type SSEClientTransportOptions,
  type TransportSendOptions,
} from '@modelcontextprotocol/client';

/**
 * The SDK's legacy SSE client transport, with the per-message `headers` of a request's options
 * (`TransportSendOptions.headers`, which the SDK's SSE transport ignores) on that message's POST:
 * a request that carries its caller's trace context (`traceparent`, `tracestate`) sends it in its
 * HTTP headers, as on Streamable HTTP.
 *
 * The SDK builds each POST itself (its own headers, after an await), so the headers are found by
 * the POST's body: the message as the SDK serialises it (`JSON.stringify`), unique while it is
 * sent (a request's id is). Concurrent requests on one connection each find their own; a
 * message sent without headers costs nothing more.
 */
export class HeaderedSseTransport extends SSEClientTransport {
  readonly #byBody: Map<string, Readonly<Record<string, string>>>;

  constructor(url: URL, opts: SSEClientTransportOptions = {}) {
    const byBody = new Map<string, Readonly<Record<string, string>>>();
    super(url, { ...opts, fetch: withMessageHeaders(opts.fetch ?? fetch, byBody) });
    this.#byBody = byBody;
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
