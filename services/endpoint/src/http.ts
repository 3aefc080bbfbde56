import { validateOriginHeader } from '@modelcontextprotocol/server';
import type { AgentTokens, TokenGrant } from './agent-tokens.js';
import type { AgentServers } from './agent-server.js';
import { LegacyStreams, type LegacyStreamsDeps } from './legacy-streams.js';
import { StreamSlot, StreamSlots, type StreamLimits } from './stream-slots.js';
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
import {
  corsHeaders,
  faceNames,
  json,
  preflight,
  rpcError,
  tooManyFailures,
  tooManyStreams,
  withHeaders,
} from './http-answers.js';
import { checkHost, type RequestHead } from './request-head.js';

export { refusedMalformedHost } from './request-head.js';
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

/** A request that opens a long-lived notification stream: a 2025 client's GET, a 2026-07-28 listen. */
function streamKind(request: Request): 'legacy' | 'listen' | undefined {
  if (request.method === 'GET')
    return (request.headers.get('accept') ?? '').includes('text/event-stream') ? 'legacy' : undefined;
  // The SDK refuses a listen whose Mcp-Method header is missing or names another method.
  return request.method === 'POST' && request.headers.get('mcp-method')?.trim() === 'subscriptions/listen'
    ? 'listen'
    : undefined;
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

/** {@link EndpointHandler}: `admit` in two steps (the route and the browser's checks, then the token), `serve`. */
class EndpointRequests implements EndpointHandler {
  private readonly legacy: LegacyStreams;
  private readonly slots: StreamSlots;

  constructor(
    private readonly deps: EndpointHttpDeps,
    private readonly opts: EndpointHttpOptions,
  ) {
    this.legacy = new LegacyStreams(deps, () => deps.servers.counted('notifications/stream', 'server_not_granted'));
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
    const path = request.path;
    if (path === '/healthz' && request.method === 'GET') {
      const ready = opts.isReady();
      return json(ready ? 200 : 503, { ok: ready, service: 'endpoint' });
    }
    if (opts.oauth !== undefined && path.startsWith(`${PROTECTED_RESOURCE_PREFIX}/`))
      return this.resourceMetadata(request, request.url);
    const face = facePath(path);
    if (face === undefined) return json(404, { error: { code: 'not_found', message: 'no such route' } });
    const host = checkHost(request.header('host'), opts.allowedHosts);
    if (!host.ok) {
      deps.servers.refused('host');
      return rpcError(403, -32000, `Forbidden: ${host.message}`);
    }
    const origin = request.header('origin');
    if (!validateOriginHeader(origin, opts.allowedOrigins).ok) {
      deps.servers.refused('origin');
      return rpcError(403, -32000, 'Forbidden: origin not allowed');
    }
    const cors = corsHeaders(origin, opts.corsOrigins);
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
    // An address over its failed-token limit is refused before its token is read: a right guess
    // and a wrong one get the same answer until it may try again.
    const blocked = deps.failures.blocked(clientAddress);
    if (blocked !== undefined) {
      deps.servers.refused('token_failures_limited');
      return tooManyFailures(blocked, cors);
    }
    const grant = await deps.tokens.verify(request.header('authorization'));
    if (typeof grant === 'string') {
      const challenge = bearerChallenge(opts.oauth, request.url, request.path, grant !== 'missing');
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
      const challenge = bearerChallenge(opts.oauth, request.url, request.path, true);
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
    if (!checkHost(request.header('host'), opts.allowedHosts).ok) {
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
