import { SpanKind, SpanStatusCode, context, trace, type Attributes, type Tracer } from '@opentelemetry/api';
import { McpAttributes } from '@mcpx/telemetry';

/** The error codes a discovery's span and metrics may carry: the MCP client's, and the discovery's own. */
const KNOWN_CODES = new Set([
  'connect_failed',
  'unauthorized',
  'session_expired',
  'timeout',
  'cancelled',
  'protocol_error',
  'transport_error',
  'era_negotiation_failed',
  'maybe_executed',
  // The discovery's own: its total deadline, a credential it could not prepare, a bound of the whole discovery.
  'deadline',
  'credential',
  'response_too_large',
]);

/**
 * A stable, bounded error code for a discovery's failure (an attribute and a metric label): the
 * MCP client's code when it gave one, else `error`. Never a message (it may name a URL).
 */
export function discoveryErrorCode(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && KNOWN_CODES.has(code) ? code : 'error';
}

/** A JSON-RPC method name as sent by our own client: short, of the characters method names use. */
const METHOD = /^[A-Za-z][A-Za-z0-9_/.-]{0,63}$/;
/** Bodies longer than this are not parsed for their method (ours are small; a page cursor is bounded). */
const MAX_PARSED_BODY = 64 * 1024;

/** The JSON-RPC method a request of our client carries: the modern `Mcp-Method` header, else the body's `method`. */
function methodOf(init: RequestInit | undefined): string | undefined {
  const header = new Headers(init?.headers).get('mcp-method');
  if (header !== null) return METHOD.test(header) ? header : undefined;
  const body = init?.body;
  if (typeof body !== 'string' || body.length > MAX_PARSED_BODY || !body.startsWith('{')) return undefined;
  try {
    const method = (JSON.parse(body) as { method?: unknown }).method;
    return typeof method === 'string' && METHOD.test(method) ? method : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Wraps one discovery's fetch so each JSON-RPC request it sends (the era probe's `server/discover`,
 * `initialize`, each page of `tools/list`) is a client span named by its method, child of the
 * active span (the discovery's connect or listing), carrying `mcp.method.name`, the page number of
 * a `tools/list` (from 1), the HTTP status, and an outcome with an error code. The span ends when
 * the response's headers arrive (the body is read by the client after; its bounds are the
 * discovery's). Requests with no method (a GET stream, a DELETE) pass through untraced. The
 * `traceparent` the server receives is the page's span's (the wrapped fetch injects the active context).
 */
export function tracedRequests(tracer: Tracer, base: typeof fetch, attrs: Attributes): typeof fetch {
  let pages = 0;
  return async (input, init) => {
    const method = methodOf(init);
    if (method === undefined) return base(input, init);
    const page = method === 'tools/list' ? ++pages : undefined;
    const span = tracer.startSpan(
      method,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          ...attrs,
          [McpAttributes.methodName]: method,
          ...(page !== undefined ? { 'mcpx.page': page } : {}),
        },
      },
      context.active(),
    );
    try {
      const res = await context.with(trace.setSpan(context.active(), span), () => base(input, init));
      span.setAttribute('http.response.status_code', res.status);
      if (res.ok) span.setAttribute(McpAttributes.outcome, 'ok');
      else {
        const code = res.status === 401 ? 'unauthorized' : `http_${res.status}`;
        span.setAttributes({ [McpAttributes.outcome]: 'error', [McpAttributes.errorCode]: code });
        span.setStatus({ code: SpanStatusCode.ERROR, message: `HTTP ${res.status}` });
      }
      return res;
    } catch (err) {
      const code = discoveryErrorCode(err);
      span.setAttributes({
        [McpAttributes.outcome]: 'error',
        [McpAttributes.errorCode]: code === 'error' ? 'transport_error' : code,
      });
      span.setStatus({ code: SpanStatusCode.ERROR, message: code });
      throw err;
    } finally {
      span.end();
    }
  };
}
