import { lookup as dnsLookup } from 'node:dns/promises';
import type { LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { Agent, fetch as undiciFetch } from 'undici';
import type { RequestInit as UndiciRequestInit } from 'undici';
import { parseAddress } from './address.js';
import { boundResponse, rawResponseMeters, type Bounding } from './bounded-response.js';
import { OutboundRefusedError, findRefusal, type OutboundError } from './errors.js';
import { meteringInterceptor } from './metering-interceptor.js';
import { assertAllowedAddress, isAllowedHttpHost, validatePolicy } from './policy.js';
import type { OutboundPolicy } from './policy.js';
import { resolveResponseBounds, type ResponseBounds } from './response-bounds.js';

/** One resolved address of a hostname. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a hostname to all its addresses; the default is `dns.lookup` with `all: true`. */
export type OutboundLookup = (hostname: string) => Promise<ResolvedAddress[]>;

export interface OutboundFetchOptions {
  /** Replaces DNS resolution (tests). Called once per new connection, never twice for one. */
  lookup?: OutboundLookup;
  /** Bounds on every response body, over the defaults of `DEFAULT_RESPONSE_BOUNDS` (decompressed bytes). */
  bounds?: Partial<ResponseBounds>;
  /** Told of every body cut at a bound (for a metric, a span event or a log line): never throws back. */
  onResponseCut?: (err: OutboundError) => void;
}

/** What {@link OutboundRequest} sends: one request, its body a string (or none). */
export interface OutboundRequestOptions {
  method: string;
  headers: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
}

/** The answer of {@link OutboundRequest}: status, lower-cased headers, and the body as a Node stream. */
export interface OutboundResponse {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  body: NodeJS.ReadableStream & { destroy(error?: Error): unknown };
}

/**
 * One request on the same checked connection pool as the fetch, without fetch's WHATWG layer
 * (no Request/Response objects, no web streams): undici's `Dispatcher.request`. Redirects are
 * never followed (a 3xx is returned as is: the caller treats it as a failure). undici's
 * `body.destroy()` emits an AbortError: listen for 'error' before destroying. A failure before
 * the response surfaces like fetch's: a `TypeError('fetch failed')` with the socket error as its
 * cause, or an {@link OutboundRefusedError}.
 */
export type OutboundRequest = (url: URL, opts: OutboundRequestOptions) => Promise<OutboundResponse>;

/** A `fetch` bound to an outbound policy; `close()` ends its pooled connections. */
export type OutboundFetch = typeof fetch & { close(): Promise<void>; request: OutboundRequest };

/** Redirects followed, within the origin, when the caller leaves `redirect` at `follow`. */
export const MAX_REDIRECTS = 5;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const BODY_HEADERS = ['content-type', 'content-length', 'content-encoding', 'content-language', 'content-location'];

const systemLookup: OutboundLookup = async (hostname) => {
  const found = await dnsLookup(hostname, { all: true, verbatim: true });
  return found.map((a: LookupAddress) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

function wantedFamily(family: number | string | undefined): 4 | 6 | undefined {
  if (family === 4 || family === 'IPv4') return 4;
  if (family === 6 || family === 'IPv6') return 6;
  return undefined;
}

/**
 * A `net.connect` lookup that resolves once and refuses the whole connection unless the policy
 * allows every address; the socket then connects to those very addresses, so nothing can change
 * between the check and the connect (no DNS rebinding). Runs for every new socket.
 */
function checkedLookup(policy: OutboundPolicy, resolve: OutboundLookup): LookupFunction {
  return (hostname, options, callback) => {
    const fail = (err: unknown): void => callback(err as NodeJS.ErrnoException, '', 0);
    void resolve(hostname).then((found) => {
      const family = wantedFamily(options.family);
      const addresses = family === undefined ? found : found.filter((a) => a.family === family);
      const first = addresses[0];
      try {
        if (first === undefined)
          throw Object.assign(new Error(`no address found for ${hostname}`), { code: 'ENOTFOUND' });
        for (const a of addresses) assertAllowedAddress(a.address, policy, hostname);
      } catch (err) {
        fail(err);
        return;
      }
      if (options.all === true) callback(null, addresses);
      else callback(null, first.address, first.family);
    }, fail);
  };
}

function parseUrl(text: string): URL {
  try {
    return new URL(text);
  } catch {
    // Node's TypeError carries the input (query string and all) as a property.
    throw new TypeError('invalid URL');
  }
}

/** Throws unless the policy lets a request for `url` start; IP literals are checked here (no lookup runs for them). */
function assertRequestAllowed(url: URL, policy: OutboundPolicy): void {
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw OutboundRefusedError.scheme(url);
  if (url.username !== '' || url.password !== '')
    throw new TypeError(`URLs with credentials are not supported (${url.protocol}//${url.host})`);
  if (url.protocol === 'http:' && !isAllowedHttpHost(url, policy)) throw OutboundRefusedError.plainHttp(url);
  const literal = url.hostname.replace(/^\[|\]$/g, '');
  if (parseAddress(literal) !== undefined) assertAllowedAddress(literal, policy, url.hostname);
}

/** Same scheme, host and port, or the https form of an http URL on default ports. */
function withinOrigin(from: URL, to: URL): boolean {
  if (to.username !== '' || to.password !== '') return false;
  if (from.hostname !== to.hostname) return false;
  if (from.protocol === to.protocol && from.port === to.port) return true;
  return from.protocol === 'http:' && to.protocol === 'https:' && from.port === '' && to.port === '';
}

function isStream(body: unknown): boolean {
  return typeof body === 'object' && body !== null && ('getReader' in body || Symbol.asyncIterator in body);
}

/** The request for the next hop, as fetch does it: 303 (and 301/302 after POST) become a GET without body. */
function redirectedInit(init: RequestInit, status: number): RequestInit {
  const method = (init.method ?? 'GET').toUpperCase();
  if (
    (status === 303 && method !== 'GET' && method !== 'HEAD') ||
    ((status === 301 || status === 302) && method === 'POST')
  ) {
    const headers = new Headers(init.headers);
    for (const h of BODY_HEADERS) headers.delete(h);
    return { ...init, method: 'GET', body: null, headers };
  }
  if (init.body !== undefined && init.body !== null && isStream(init.body)) {
    throw new TypeError('cannot follow a redirect: the request body was a stream and cannot be sent again');
  }
  return init;
}

/** Splits fetch's input into a URL and init; a Request's own parts are overridden by `init`. */
function normalizeInput(input: string | URL | Request, init: RequestInit | undefined): { url: URL; init: RequestInit } {
  if (typeof input === 'string' || input instanceof URL) return { url: parseUrl(String(input)), init: { ...init } };
  const own: RequestInit & { duplex?: 'half' } = {
    method: input.method,
    headers: input.headers,
    body: input.body,
    signal: input.signal,
    redirect: input.redirect,
  };
  if (input.body !== null) own.duplex = 'half';
  return { url: parseUrl(input.url), init: { ...own, ...init } };
}

/** The response bounds of `opts` (checked), and its cut observer guarded. */
function boundingOf(opts: OutboundFetchOptions): Bounding {
  const onResponseCut = opts.onResponseCut;
  if (onResponseCut === undefined) return { bounds: resolveResponseBounds(opts.bounds) };
  return {
    bounds: resolveResponseBounds(opts.bounds),
    onCut: (err: OutboundError) => {
      try {
        onResponseCut(err);
      } catch {
        // An observer's failure must not change what the caller sees.
      }
    },
  };
}

/**
 * A `fetch` that only reaches what the outbound policy allows (docs/bus.md#the-outbound-policy): http(s) only; plain
 * http only under `local` or to `allowHttpHosts`; every address a hostname resolves to is checked
 * when a connection opens, and that connection goes to the checked address (the Host header and
 * TLS SNI stay the original hostname). With `redirect: 'follow'` (the default) redirects are
 * followed up to {@link MAX_REDIRECTS} times within the origin and refused across origins;
 * `manual` and `error` are passed through, so the MCP SDK transports can follow within the origin
 * themselves. Bodies stream (SSE works). Refusals throw {@link OutboundRefusedError}.
 *
 * Every response body, on both the fetch and the request path, is held to `opts.bounds` (see
 * `boundResponse`): a body that passes one errors with an `OutboundError` (`response_too_large`)
 * naming it, after the upstream was cancelled. A bound that is not a positive integer throws here.
 *
 * One connection pool per call: create it once per policy at wiring time and `close()` it on shutdown.
 */
export function createOutboundFetch(policy: OutboundPolicy, opts: OutboundFetchOptions = {}): OutboundFetch {
  validatePolicy(policy);
  const bounding = boundingOf(opts);
  const bounded = (response: Response, url: URL, init: RequestInit): Response =>
    boundResponse(response, { url, method: init.method ?? 'GET', body: init.body }, bounding);
  const agent = new Agent({ connect: { lookup: checkedLookup(policy, opts.lookup ?? systemLookup) } });
  // The request path counts in the dispatcher; the fetch path after undici's decompression.
  const metered = agent.compose(meteringInterceptor(rawResponseMeters(bounding)));

  async function send(url: URL, init: RequestInit): Promise<Response> {
    try {
      // undici's own fetch, as its Agent needs; its types differ from the global ones in name only.
      return await undiciFetch(url, { ...(init as UndiciRequestInit), dispatcher: agent });
    } catch (err) {
      throw findRefusal(err) ?? err;
    }
  }

  async function outboundFetch(input: string | URL | Request, given?: RequestInit): Promise<Response> {
    const { url, init } = normalizeInput(input, given);
    assertRequestAllowed(url, policy);
    if (init.redirect === 'manual' || init.redirect === 'error') return bounded(await send(url, init), url, init);

    let current = url;
    let hopInit: RequestInit = { ...init, redirect: 'manual' };
    for (let hop = 0; ; hop++) {
      const response = await send(current, hopInit);
      const location = REDIRECT_STATUSES.has(response.status) ? response.headers.get('location') : null;
      if (location === null) return bounded(response, current, hopInit);
      await response.body?.cancel();
      let target: URL;
      try {
        target = new URL(location, current);
      } catch {
        throw new TypeError(`invalid redirect location from ${current.protocol}//${current.host}`);
      }
      if (!withinOrigin(url, target)) throw OutboundRefusedError.redirect(url, target);
      if (hop === MAX_REDIRECTS) throw OutboundRefusedError.redirectLimit(url, MAX_REDIRECTS);
      assertRequestAllowed(target, policy);
      hopInit = redirectedInit(hopInit, response.status);
      current = target;
    }
  }

  // The policy check of a URL is pure: the call path sends to one session URL over and over.
  let allowedHref: string | undefined;
  const request: OutboundRequest = async (url, opts) => {
    if (url.href !== allowedHref) {
      assertRequestAllowed(url, policy);
      allowedHref = url.href;
    }
    try {
      const res = await metered.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: opts.method,
        headers: opts.headers,
        body: opts.body ?? null,
        signal: opts.signal ?? null,
      });
      return { statusCode: res.statusCode, headers: res.headers, body: res.body };
    } catch (err) {
      if (opts.signal?.aborted) throw err;
      throw findRefusal(err) ?? new TypeError('fetch failed', { cause: err });
    }
  };

  return Object.assign(outboundFetch, { close: () => agent.close(), request });
}
