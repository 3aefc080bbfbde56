import { Response as UndiciResponse } from 'undici';
import { boundedWebBody, refusedWebBody, type BodyStop } from './bounded-body.js';
import { ByteMeter, type ByteBudget, type MeterLimits } from './byte-meter.js';
import { ResponseBound, type OutboundError } from './errors.js';
import type { ResponseBounds } from './response-bounds.js';
import { cutoffEvents, requestIds } from './sse-cutoff.js';
import type { MeterFactory } from './metering-interceptor.js';

/** What the bodies of one fetch are held to. */
export interface Bounding {
  /** Per-response bounds; absent for a budget-only layer. */
  bounds?: ResponseBounds;
  /** A total shared by every response of this fetch. */
  budget?: ByteBudget;
  stop?: BodyStop;
  onCut?: (err: OutboundError) => void;
}

/** The request a response answers, as far as bounding needs it. */
export interface Asked {
  url: URL;
  method: string;
  /** The POST body (the JSON-RPC requests a cut event stream answers in its stand-in events). */
  body?: unknown;
}

/** The media type of a `content-type` value, lower-cased, without parameters. */
function mediaType(value: string | null | undefined): string {
  return (value ?? '').split(';', 1)[0]!.trim().toLowerCase();
}

/** A Content-Length made of digits only, as a number; anything else is no declaration. */
function declaredLength(value: string | null | undefined): number | undefined {
  if (value === null || value === undefined || !/^\d{1,16}$/.test(value.trim())) return undefined;
  return Number(value.trim());
}

function limitsFor(stream: boolean, b: Bounding): MeterLimits {
  const limits: MeterLimits = {};
  if (b.budget !== undefined) limits.budget = b.budget;
  if (b.bounds !== undefined) {
    limits.body = stream
      ? { name: ResponseBound.sseStream, limit: b.bounds.maxSseStreamBytes }
      : { name: ResponseBound.body, limit: b.bounds.maxBodyBytes };
    if (stream) {
      limits.sseEvent = b.bounds.maxSseEventBytes;
      limits.sseEvents = b.bounds.maxSseEvents;
    }
  }
  return limits;
}

/**
 * `response` with its body held to the bounds: counted as it is read (after decompression), a
 * declared Content-Length above a bound refused without reading, the upstream cancelled at the
 * first byte too many. The body then errors with an `OutboundError` naming the bound; an event
 * stream answering a POST instead ends with one JSON-RPC error per request of the POST (see
 * `sse-cutoff.ts`), so the MCP client above fails the request at once with that message.
 */
export function boundResponse(response: Response, asked: Asked, b: Bounding): Response {
  const source = response.body;
  if (source === null) return response;
  const stream = mediaType(response.headers.get('content-type')) === 'text/event-stream';
  const meter = new ByteMeter(limitsFor(stream, b), asked.url);
  const tail =
    stream && asked.method.toUpperCase() === 'POST'
      ? (err: OutboundError) => cutoffEvents(requestIds(asked.body), err)
      : undefined;
  const declared = declaredLength(response.headers.get('content-length'));
  const refused = declared === undefined ? undefined : meter.refuseDeclared(declared);
  let body: ReadableStream<Uint8Array>;
  if (refused !== undefined) {
    source.cancel(refused).catch(() => undefined);
    b.onCut?.(refused);
    body = refusedWebBody(refused, tail);
  } else {
    body = boundedWebBody(source, {
      meter,
      ...(tail ? { tail } : {}),
      ...(b.onCut ? { onCut: b.onCut } : {}),
      ...(b.stop ? { stop: b.stop } : {}),
    });
  }
  // undici's own Response, as its fetch returns; the global one differs in name only.
  const headers: Array<[string, string]> = [...response.headers];
  const out = new UndiciResponse(body, {
    status: response.status,
    statusText: response.statusText,
    headers,
  }) as unknown as Response;
  // What a constructed Response cannot be given: the SDK reads `url` to name unfollowed redirects.
  Object.defineProperty(out, 'url', { value: response.url });
  Object.defineProperty(out, 'redirected', { value: response.redirected });
  return out;
}

function headerOf(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * The meters of the outbound fetch's own request path, for `meteringInterceptor`: the same
 * bounds as {@link boundResponse}, counted in the dispatcher (no stream hop on the call path).
 */
export function rawResponseMeters(b: Bounding): MeterFactory {
  return (opts, headers) => {
    const stream = mediaType(headerOf(headers, 'content-type')) === 'text/event-stream';
    const meter = new ByteMeter(limitsFor(stream, b), String(opts.origin ?? 'about:blank'));
    const declared = declaredLength(headerOf(headers, 'content-length'));
    const refused = declared === undefined ? undefined : meter.refuseDeclared(declared);
    if (refused !== undefined) b.onCut?.(refused);
    const take = (chunk: Uint8Array): OutboundError | undefined => {
      const err = meter.take(chunk);
      if (err !== undefined) b.onCut?.(err);
      return err;
    };
    return refused === undefined ? { take } : { take, refused };
  };
}
