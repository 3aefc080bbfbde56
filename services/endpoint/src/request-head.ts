import type { IncomingMessage, ServerResponse } from 'node:http';
import { validateHostHeader } from '@modelcontextprotocol/server';

/**
 * What `admit` judges: a request's method, target and headers, read from the node request as they
 * are. No web `Request` (undici's header list, URL and abort signal) is built for it, and no URL
 * unless an answer needs one: every call passes here, and most are answered by the lean path,
 * which never needs either.
 */
export interface RequestHead {
  method: string;
  /** The target's path as the request's URL reads it (`url.pathname`). */
  path: string;
  /** The absolute URL of the request (its origin from `Host`), parsed when first read. */
  readonly url: URL;
  /** A header's value as web `Headers.get` gives it (repeated ones joined by `, `), or null. */
  header(name: string): string | null;
}

/**
 * Paths a URL's parser gives back as they are: unreserved and sub-delimiter characters, `:`, `@`,
 * `%` and `/`, from a leading `/`. A segment that starts with a dot (`.`, `..`) or a `%2e` (which
 * the parser reads as a dot) is resolved by it, so such a path is not taken as it is.
 */
const VERBATIM_PATH_RE = /^\/[A-Za-z0-9\-._~!$&'()*+,;=:@%/]*$/;
const DOT_SEGMENT_RE = /\/\.|%2e/i;

class NodeRequestHead implements RequestHead {
  readonly method: string;
  readonly path: string;
  private parsed: URL | undefined;

  constructor(private readonly req: IncomingMessage) {
    this.method = req.method ?? 'GET';
    const target = req.url ?? '/';
    const q = target.indexOf('?');
    const path = q < 0 ? target : target.slice(0, q);
    this.path = VERBATIM_PATH_RE.test(path) && !DOT_SEGMENT_RE.test(path) ? path : this.url.pathname;
  }

  get url(): URL {
    return (this.parsed ??= new URL(`http://${this.req.headers.host ?? 'localhost'}${this.req.url ?? '/'}`));
  }

  header(name: string): string | null {
    const v = this.req.headers[name];
    return v === undefined ? null : Array.isArray(v) ? v.join(', ') : v;
  }
}

/** A node request's head for `admit` (its Host already found well-formed: {@link refusedMalformedHost}). */
export function requestHead(req: IncomingMessage): RequestHead {
  return new NodeRequestHead(req);
}

/** Allowed Host values seen, per allow-list: at most this many are remembered. */
const MAX_SEEN_HOSTS = 64;
const seenHosts = new WeakMap<readonly string[], Set<string>>();

/**
 * The SDK's Host check (DNS rebinding: the Host's name must be one of `allowed`), whose URL parse
 * is done once per Host value that passed: a request's Host is checked by the gate and again by
 * the lean path, and a client sends the same one on every call. A refused Host is never
 * remembered, so every answer is the SDK's own.
 */
export function checkHost(
  host: string | null,
  allowed: readonly string[],
): { ok: true } | { ok: false; message: string } {
  let seen = seenHosts.get(allowed);
  if (host !== null && seen?.has(host) === true) return { ok: true };
  const verdict = validateHostHeader(host, allowed as string[]);
  if (!verdict.ok) return { ok: false, message: verdict.message };
  if (host !== null) {
    if (seen === undefined) seenHosts.set(allowed, (seen = new Set()));
    if (seen.size < MAX_SEEN_HOSTS) seen.add(host);
  }
  return { ok: true };
}

/** A Host header's one legal shape: a name or bracketed IPv6 address and an optional port. */
const HOST_RE = /^(?:\[[0-9A-Fa-f:.]{2,45}\]|[A-Za-z0-9_.-]{1,253})(?::[0-9]{1,5})?$/;

const MALFORMED_HOST = JSON.stringify({
  jsonrpc: '2.0',
  error: {
    code: -32600,
    message: 'Bad Request: malformed Host header',
    data: { code: 'invalid_input', details: { field: 'host' } },
  },
  id: null,
});

/**
 * Answers a request whose `Host` cannot be a URL's authority (userinfo such as `user@host`, a
 * path, a space) with 400 naming the field (its value is not repeated), before anything builds a
 * URL on it (which would throw, a 500); true when it did. Counted as the refusal `host`. An absent
 * Host is not malformed here: the Host check refuses it.
 */
export function refusedMalformedHost(
  req: IncomingMessage,
  res: ServerResponse,
  refused: (reason: string) => void,
): boolean {
  const host = req.headers.host;
  if (host === undefined || HOST_RE.test(host)) return false;
  refused('host');
  res.writeHead(400, { 'content-type': 'application/json', connection: 'close' }).end(MALFORMED_HOST);
  return true;
}
