import type { IncomingMessage, ServerResponse } from 'node:http';
import { validateHostHeader, validateOriginHeader } from '@modelcontextprotocol/server';
import type { AgentTokens, TokenGrant } from './agent-tokens.js';
import type { AgentServers } from './agent-server.js';
import { LegacyStreams, type LegacyStreamsDeps } from './legacy-streams.js';
import { StreamSlot, StreamSlots, type StreamLimits, type StreamRefusal } from './stream-slots.js';
import {
  PROTECTED_RESOURCE_PREFIX,
  bearerChallenge,
  protectedResourceMetadata,
  type OAuthResourceOptions,
} from './oauth-resource.js';
import { wantsCompact } from './compact-face.js';
import type { TokenFailures } from './token-failures.js';
import type { ToolSets } from './tool-sets.js';
import { facePath } from './faces.js';
import { mayInitialize, prepareListen, readBody, withSession } from './face-streams.js';
import { sessionOf, type LegacySubscriptions } from './legacy-subscriptions.js';
import type { Subscriptions } from './subscriptions.js';

export interface EndpointHttpOptions {
  /** Host names (no port) a request's `Host` may carry: DNS-rebinding protection. */
  allowedHosts: string[];
  /** Host names (no scheme, no port) a browser request's `Origin` may name; others are refused. */
  allowedOrigins: string[];
  /** Origins given CORS headers (a subset of the allowed ones); none: no CORS at all. */
  corsOrigins: string[];
  isReady: () => boolean;
  /**
   * OAuth sign-in with the registry as authorization server (`EndpointConfig.oauth`):
   * protected-resource metadata per agent endpoint and a 401 that points to it. Absent: agent
   * tokens only.
   */
  oauth?: OAuthResourceOptions;
  /** Open notification streams per token, per account and per instance (`StreamSlots`). */
  streams: StreamLimits;
}

export interface EndpointHttpDeps extends LegacyStreamsDeps {
  tokens: AgentTokens;
  servers: AgentServers;
  toolSets: ToolSets;
  /** The per-address limit on failed token attempts. */
  failures: TokenFailures;
  /** Resource subscriptions and upstream list changes (absent: only the agent's own tool set changes). */
  subscriptions?: Subscriptions;
  legacySubscriptions?: LegacySubscriptions;
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
}

/** A JSON-RPC error body with no id (the request was refused before it was read). */
function rpcError(
  status: number,
  code: number,
  message: string,
  headers: Record<string, string> = {},
  data?: Record<string, unknown>,
): Response {
  return json(
    status,
    { jsonrpc: '2.0', error: { code, message, ...(data !== undefined ? { data } : {}) }, id: null },
    headers,
  );
}

/**
 * An address over its failed-token limit: 429 with `Retry-After` (whole seconds) and the
 * connector's `rate_limited` in the error's data, naming the field (`authorization`) and the limit.
 */
function tooManyFailures(retryAfterMs: number, cors: Record<string, string>): Response {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return rpcError(
    429,
    -32000,
    'Too many requests: too many failed token attempts from this address; retry later',
    { 'retry-after': String(seconds), ...cors },
    {
      code: 'rate_limited',
      details: { field: 'authorization', limit: 'token_failures_per_address', retryAfterMs },
    },
  );
}

/** A Host header's one legal shape: a name or bracketed IPv6 address and an optional port. */
const HOST_RE = /^(?:\[[0-9A-Fa-f:.]{2,45}\]|[A-Za-z0-9_.-]{1,253})(?::[0-9]{1,5})?$/;

/**
 * Whether a request's `Host` cannot be a URL's authority (userinfo such as `user@host`, a path, a
 * space): such a request is refused with 400 before a URL is built on it (which would throw, a 500).
 * An absent Host is not malformed here: the Host check refuses it.
 */
function malformedHost(host: string | undefined): boolean {
  return host !== undefined && !HOST_RE.test(host);
}

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
 * Answers a request whose `Host` is malformed with 400 naming the field (its value is not
 * repeated), before anything builds a URL on it; true when it did. Counted as the refusal `host`.
 */
export function refusedMalformedHost(
  req: IncomingMessage,
  res: ServerResponse,
  refused: (reason: string) => void,
): boolean {
  if (!malformedHost(req.headers.host)) return false;
  refused('host');
  res.writeHead(400, { 'content-type': 'application/json', connection: 'close' }).end(MALFORMED_HOST);
  return true;
}

function tooManyStreams(r: StreamRefusal, cors: Record<string, string>): Response {
  return rpcError(r.status, -32000, r.message, { 'retry-after': String(r.retryAfterSeconds), ...cors }, r.data);
}

/**
 * What `admit` judges: a request's method, target and headers, read from the node request as they
 * are. No web `Request` (undici's header list, URL and abort signal) is built for it: every call
 * passes here, and most are answered by the lean path, which never needs one.
 */
export interface RequestHead {
  method: string;
  /** The absolute URL of the request (its origin from `Host`), parsed once. */
  url: URL;
  /** A header's value as web `Headers.get` gives it (repeated ones joined by `, `), or null. */
  header(name: string): string | null;
}

/** A node request's head for `admit` (its Host already found well-formed: `refusedMalformedHost`). */
export function requestHead(req: IncomingMessage): RequestHead {
  const headers = req.headers;
  return {
    method: req.method ?? 'GET',
    url: new URL(`http://${headers.host ?? 'localhost'}${req.url ?? '/'}`),
    header: (name) => {
      const v = headers[name];
      return v === undefined ? null : Array.isArray(v) ? v.join(', ') : v;
    },
  };
}

/** A request that opens a long-lived notification stream: a 2025 client's GET, a 2026-07-28 listen. */
function streamKind(request: Request): 'legacy' | 'listen' | undefined {
  if (request.method === 'GET')
    return (request.headers.get('accept') ?? '').includes('text/event-stream') ? 'legacy' : undefined;
  // The SDK refuses a listen whose Mcp-Method header is missing or names another method.
  return request.method === 'POST' && request.headers.get('mcp-method')?.trim() === 'subscriptions/listen'
    ? 'listen'
    : undefined;
}

function corsHeaders(origin: string | null, opts: EndpointHttpOptions): Record<string, string> {
  if (origin === null || !opts.corsOrigins.includes(origin)) return {};
  return {
    'access-control-allow-origin': origin,
    'access-control-expose-headers': 'mcp-session-id, mcp-protocol-version, www-authenticate',
    vary: 'Origin',
  };
}

function withHeaders(res: Response, headers: Record<string, string>): Response {
  if (Object.keys(headers).length === 0) return res;
  const h = new Headers(res.headers);
  for (const [k, v] of Object.entries(headers)) h.set(k, v);
  return new Response(res.body, { status: res.status, statusText: res.statusText, headers: h });
}

/** A request its headers admitted: the token's grant, and the CORS headers its answer carries. */
export interface Admitted {
  grant: TokenGrant;
  cors: Record<string, string>;
  /** The per-server face's server (granted to the token's agent); absent on the merged face. */
  server?: string;
}

/**
 * The endpoint's web-standard request handler, in two steps so that no body is read before the
 * client is known. `admit` answers from the method, path and headers alone (it never reads the
 * body): `/healthz`, and `/v1/agents/<agent>/mcp` (and its per-server face
 * `/v1/agents/<agent>/servers/<server>/mcp`, ./faces.ts) behind, in this order, the Host check (DNS
 * rebinding), the Origin check, the CORS preflight (only for configured origins), the bearer
 * token (agent-scoped; the path must name the token's agent, and a server its grant names); what
 * passes is `Admitted`. `serve`
 * then hands an admitted request (its body read) to the agent's MCP handler. A legacy client's GET
 * opens the notification stream (the stateless 2025 serving has none of its own), on which
 * `notifications/tools/list_changed` is sent when the agent's tool set changes.
 */
export interface EndpointHandler {
  admit(request: RequestHead, clientAddress: string): Promise<Response | Admitted>;
  serve(request: Request, admitted: Admitted): Promise<Response>;
}

export function endpointHandler(deps: EndpointHttpDeps, opts: EndpointHttpOptions): EndpointHandler {
  return new EndpointRequests(deps, opts);
}

/** The headers of a CORS preflight's answer (only for configured origins: `cors` is empty for others). */
function preflight(cors: Record<string, string>): Response {
  if (Object.keys(cors).length === 0)
    return new Response(null, { status: 405, headers: { allow: 'GET, POST, DELETE' } });
  return new Response(null, {
    status: 204,
    headers: {
      ...cors,
      'access-control-allow-methods': 'GET, POST, DELETE',
      'access-control-allow-headers':
        'authorization, content-type, accept, mcp-protocol-version, mcp-session-id, mcp-method, mcp-name, last-event-id, traceparent, tracestate',
      'access-control-max-age': '600',
    },
  });
}

/** A face path's agent and server segments, percent-decoded; a segment that does not decode is refused (400) naming it. */
function faceNames(
  m: { agent: string; server?: string },
  cors: Record<string, string>,
): { agent: string; server: string | undefined } | Response {
  let agent: string;
  try {
    agent = decodeURIComponent(m.agent);
  } catch {
    return json(
      400,
      { error: { code: 'invalid_input', message: 'agent: not a valid path segment', details: { field: 'agent' } } },
      cors,
    );
  }
  try {
    return { agent, server: m.server === undefined ? undefined : decodeURIComponent(m.server) };
  } catch {
    return json(
      400,
      { error: { code: 'invalid_input', message: 'server: not a valid path segment', details: { field: 'server' } } },
      cors,
    );
  }
}

/** {@link EndpointHandler}: `admit` in two steps (the route and the browser's checks, then the token), `serve`. */
class EndpointRequests implements EndpointHandler {
  private readonly legacy: LegacyStreams;
  private readonly slots: StreamSlots;

  constructor(
    private readonly deps: EndpointHttpDeps,
    private readonly opts: EndpointHttpOptions,
  ) {
    this.legacy = new LegacyStreams(deps);
    this.slots = new StreamSlots(opts.streams, deps.tokens, (why) =>
      deps.servers.counted('notifications/stream', `token_${why}`),
    );
  }

  async admit(request: RequestHead, clientAddress: string): Promise<Response | Admitted> {
    const routed = this.route(request);
    if (routed instanceof Response) return routed;
    return this.authorize(request, routed.face, routed.cors, clientAddress);
  }

  /**
   * The first step: `/healthz`, the OAuth metadata, or an agent face behind the Host check (DNS
   * rebinding), the Origin check and the CORS preflight; the face's raw segments and the CORS
   * headers its answer carries, or the answer.
   */
  private route(
    request: RequestHead,
  ): Response | { face: { agent: string; server?: string }; cors: Record<string, string> } {
    const { deps, opts } = this;
    const url = request.url;
    if (url.pathname === '/healthz' && request.method === 'GET') {
      const ready = opts.isReady();
      return json(ready ? 200 : 503, { ok: ready, service: 'endpoint' });
    }
    if (opts.oauth !== undefined && url.pathname.startsWith(`${PROTECTED_RESOURCE_PREFIX}/`))
      return this.resourceMetadata(request, url);
    const face = facePath(url.pathname);
    if (face === undefined) return json(404, { error: { code: 'not_found', message: 'no such route' } });
    const host = validateHostHeader(request.header('host'), opts.allowedHosts);
    if (!host.ok) {
      deps.servers.refused('host');
      return rpcError(403, -32000, `Forbidden: ${host.message}`);
    }
    const origin = request.header('origin');
    if (!validateOriginHeader(origin, opts.allowedOrigins).ok) {
      deps.servers.refused('origin');
      return rpcError(403, -32000, 'Forbidden: origin not allowed');
    }
    const cors = corsHeaders(origin, opts);
    if (request.method === 'OPTIONS') return preflight(cors);
    return { face, cors };
  }

  /**
   * The second step: the bearer token (agent-scoped; the path must name the token's agent, and a
   * server its grant names), behind the per-address limit on failed tokens.
   */
  private async authorize(
    request: RequestHead,
    face: { agent: string; server?: string },
    cors: Record<string, string>,
    clientAddress: string,
  ): Promise<Response | Admitted> {
    const { deps, opts } = this;
    const url = request.url;
    // An address over its failed-token limit is refused before its token is read: a right guess
    // and a wrong one get the same answer until it may try again.
    const blocked = deps.failures.blocked(clientAddress);
    if (blocked !== undefined) {
      deps.servers.refused('token_failures_limited');
      return tooManyFailures(blocked, cors);
    }
    const grant = await deps.tokens.verify(request.header('authorization'));
    if (typeof grant === 'string') {
      const challenge = bearerChallenge(opts.oauth, url, url.pathname, grant !== 'missing');
      const message =
        grant === 'missing'
          ? 'Unauthorized: a bearer token of this agent is required'
          : 'Unauthorized: the token is not valid';
      return this.refuseToken(
        grant,
        clientAddress,
        () => rpcError(401, -32001, message, { 'www-authenticate': challenge, ...cors }),
        cors,
      );
    }
    const names = faceNames(face, cors);
    if (names instanceof Response) return names;
    const { server } = names;
    // A per-server face of a server the agent's grant does not name (unknown, another account's,
    // revoked) is refused exactly as another agent's path is: the path is no oracle of names.
    const ownAgent = names.agent === grant.agent || names.agent === grant.agentName;
    if (!ownAgent || (server !== undefined && !(await this.grantedServer(grant, server)))) {
      // Said the same way as an unknown token: a token does not reveal which agents exist.
      const challenge = bearerChallenge(opts.oauth, url, url.pathname, true);
      return this.refuseToken(
        'agent',
        clientAddress,
        () =>
          rpcError(401, -32001, 'Unauthorized: the token is not valid for this agent', {
            'www-authenticate': challenge,
            ...cors,
          }),
        cors,
      );
    }
    return { grant, cors, ...(server !== undefined ? { server } : {}) };
  }

  /** Whether the token's agent's grant names `server` now (a deleted agent's names none). */
  private async grantedServer(grant: TokenGrant, server: string): Promise<boolean> {
    const set = await this.deps.toolSets.get(grant.account, grant.agent);
    return set?.granted.has(server) === true;
  }

  /** A refused token: counted against the address, and 429 instead of 401 once it is over its limit. */
  private async refuseToken(
    why: string,
    clientAddress: string,
    unauthorized: () => Response,
    cors: Record<string, string>,
  ): Promise<Response> {
    const { deps } = this;
    deps.servers.refused(`token_${why}`);
    const over = why === 'missing' ? undefined : await deps.failures.failed(clientAddress);
    if (over === undefined) return unauthorized();
    deps.servers.refused('token_failures_limited');
    return tooManyFailures(over, cors);
  }

  /**
   * RFC 9728 metadata of one agent endpoint: public (any origin may read it, no credentials),
   * behind the same Host check as the endpoint itself.
   */
  private resourceMetadata(request: RequestHead, url: URL): Response {
    const { deps, opts } = this;
    const oauth = opts.oauth;
    const path = url.pathname.slice(PROTECTED_RESOURCE_PREFIX.length);
    if (facePath(path) === undefined || oauth === undefined)
      return json(404, { error: { code: 'not_found', message: 'no such route' } });
    if (!validateHostHeader(request.header('host'), opts.allowedHosts).ok) {
      deps.servers.refused('host');
      return rpcError(403, -32000, 'Forbidden: host not allowed');
    }
    const open = { 'access-control-allow-origin': '*' };
    if (request.method === 'OPTIONS')
      return new Response(null, {
        status: 204,
        headers: {
          ...open,
          'access-control-allow-methods': 'GET',
          'access-control-allow-headers': 'mcp-protocol-version',
          'access-control-max-age': '600',
        },
      });
    if (request.method !== 'GET') return new Response(null, { status: 405, headers: { allow: 'GET' } });
    return json(200, protectedResourceMetadata(oauth, url, path), { 'cache-control': 'public, max-age=300', ...open });
  }

  async serve(request: Request, { grant, cors, server }: Admitted): Promise<Response> {
    const { deps } = this;
    const kind = streamKind(request);
    // Taken before any await of its own. A revocation heard while a listen's body was read is
    // caught by the tokens' recheck of open streams (AgentTokens), within its period.
    const slot = kind === undefined ? undefined : this.slots.take(grant);
    if (slot !== undefined && !(slot instanceof StreamSlot)) {
      deps.servers.refused(slot.data.details.limit);
      return tooManyStreams(slot, cors);
    }
    if (kind === 'legacy' && slot !== undefined)
      return withHeaders(
        slot.hold(this.legacy.stream(grant, server, sessionOf(request.headers.get('mcp-session-id')), request.signal)),
        cors,
      );
    const handler = deps.servers.handlerFor(grant, wantsCompact(new URL(request.url)) ? 'compact' : 'full', server);
    // A listen's subscriptions are held upstream before the SDK acknowledges it; a 2025
    // initialize gets a session id (./face-streams.ts). Only those bodies are read here.
    let forward = request;
    let parsedBody: unknown;
    let release: (() => void) | undefined;
    if (deps.subscriptions !== undefined && (kind === 'listen' || (kind === undefined && mayInitialize(request)))) {
      const read = await readBody(request);
      forward = read.request;
      parsedBody = read.parsed;
      if (kind === 'listen') {
        const prepared = await prepareListen(deps.subscriptions, grant, server, handler, read.parsed).catch(
          (err: unknown) => {
            slot?.release();
            throw err;
          },
        );
        if (prepared instanceof Response) {
          slot?.release();
          deps.servers.refused('subscriptions');
          return withHeaders(prepared, cors);
        }
        parsedBody = prepared.body;
        release = prepared.release;
      }
    }
    const res = await handler
      .fetch(forward, {
        authInfo: {
          token: grant.id,
          clientId: grant.id,
          scopes: [],
          ...(grant.expiresAt !== undefined ? { expiresAt: Math.floor(grant.expiresAt / 1000) } : {}),
        },
        ...(parsedBody !== undefined ? { parsedBody } : {}),
      })
      .catch((err: unknown) => {
        slot?.release();
        release?.();
        throw err;
      });
    const answered = kind === undefined ? withSession(parsedBody, res) : res;
    return withHeaders(slot?.hold(answered, release) ?? answered, cors);
  }
}
