import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createHash } from 'node:crypto';
import { BODY_LIMITS, ErrorCodes, WireError, checkValueBounds, invalidInput, openApiDocument } from '@mcpx/contracts';
import { serveConsole, type ConsoleSettings } from '@mcpx/console';
import type { QuotaSettings } from '@mcpx/config';
import type { TrustedProxies } from '@mcpx/config/trusted-proxies';
import { InboundGuard, refusalMessage, type InboundRefusal } from '@mcpx/inbound';
import { OAUTH_CALLBACK_PATH, OAUTH_CLIENT_METADATA_PATH, OAUTH_START_PATH } from '../credentials/oauth/paths.js';
import { actionRoute, type ActionRouteDeps } from './action-route.js';
import { Admission } from './admission.js';
import { authenticate, parseEnvelope } from './envelope-auth.js';
import type { EventStream } from './event-stream.js';
import { bodyTooLarge, isCbor, retryAfterHeader, send } from './http-codec.js';

/** The action route's own (./action-route.ts) less what the server makes for it, and the rest of the server's. */
export interface HttpDeps extends Omit<ActionRouteDeps, 'admission'> {
  events: EventStream;
  isReady: () => boolean;
  /** What the console learns of the deployment (`/console/settings.json`; absent: the defaults). */
  console?: ConsoleSettings;
  /** `GET /v1/oauth/callback` (absent: no OAuth). */
  oauthCallback?: (req: IncomingMessage, res: ServerResponse, url: URL) => Promise<void>;
  /** `GET /v1/oauth/start?ticket=…`: opens an authorization ticket in a browser (absent: no OAuth). */
  oauthStart?: (req: IncomingMessage, res: ServerResponse, url: URL) => Promise<void>;
  /** Quotas and rate limits (`config.quotas`; absent: the defaults). */
  quotas?: QuotaSettings;
  /** Whose `X-Forwarded-For` the per-address limit believes (`TRUSTED_PROXIES`; absent: nobody's). */
  trustedProxies?: TrustedProxies;
  /** `GET /v1/oauth/client-metadata.json`: the OAuth client ID metadata document (absent: none). */
  oauthClientMetadata?: (req: IncomingMessage, res: ServerResponse) => void;
  /**
   * The bounds held before a request is known (`REGISTRY_*` of `InboundLimits`): the server's
   * deadlines and sockets per address, every body read through it (its `answer` is
   * {@link answerInboundRefusal}).
   */
  inbound: InboundGuard;
}

/**
 * A refusal of the inbound bounds (`@mcpx/inbound`: deadline 408, budget 503, too large 413) in
 * the registry's shape: the API's typed error (`invalid_input` naming `body` and the bound, or
 * `unavailable` with its wait).
 */
export function answerInboundRefusal(req: IncomingMessage, res: ServerResponse, r: InboundRefusal): void {
  const message = refusalMessage(r);
  const wire =
    r.reason === 'budget'
      ? new WireError(ErrorCodes.unavailable, message, { retryAfterMs: (r.retryAfterSeconds ?? 1) * 1000 })
      : r.reason === 'too_large'
        ? bodyTooLarge()
        : invalidInput('body', message, { bound: r.bound.name, limit: r.bound.limit, status: r.status });
  send(res, r.status, { error: wire.toJSON() }, isCbor(req));
}

const OPENAPI_CACHE = 'public, max-age=3600';

/** The OpenAPI document's bytes and their ETag, built once per server. */
function openApiBytes(): { bytes: Buffer; etag: string } {
  const bytes = Buffer.from(JSON.stringify(openApiDocument()));
  return { bytes, etag: `"${createHash('sha256').update(bytes).digest('base64url').slice(0, 27)}"` };
}

/** The registry's HTTP surface: the signed action API, the event stream, the OAuth routes, the OpenAPI document, health and the console. */
export function createHttpServer(deps: HttpDeps): Server {
  const admission = new Admission(deps);
  const handleAction = actionRoute({ ...deps, admission });
  const handleEvents = eventsRoute(deps, admission);
  const openapi = openApiBytes();
  const server = createServer(InboundGuard.serverOptions, (req, res) => {
    // A socket over its address's cap is closed; a body's deadline starts.
    if (!deps.inbound.admit(req, res)) return;
    const url = new URL(req.url ?? '/', 'http://registry');
    if (req.method === 'POST' && url.pathname === '/v1/actions') {
      void handleAction(req, res);
    } else if (req.method === 'GET' && url.pathname === '/v1/events') {
      handleEvents(req, res, url);
    } else if (req.method === 'GET' && url.pathname === OAUTH_CALLBACK_PATH && deps.oauthCallback) {
      void deps.oauthCallback(req, res, url);
    } else if (req.method === 'GET' && url.pathname === OAUTH_START_PATH && deps.oauthStart) {
      void deps.oauthStart(req, res, url);
    } else if (req.method === 'GET' && url.pathname === OAUTH_CLIENT_METADATA_PATH && deps.oauthClientMetadata) {
      deps.oauthClientMetadata(req, res);
    } else if (req.method === 'GET' && url.pathname === '/v1/openapi.json') {
      // The action API's OpenAPI 3.1 document, generated from the action map: unauthenticated, cacheable.
      if (req.headers['if-none-match'] === openapi.etag)
        res.writeHead(304, { etag: openapi.etag, 'cache-control': OPENAPI_CACHE }).end();
      else
        res
          .writeHead(200, {
            'content-type': 'application/json',
            'content-length': openapi.bytes.length,
            etag: openapi.etag,
            'cache-control': OPENAPI_CACHE,
          })
          .end(openapi.bytes);
    } else if (req.method === 'GET' && url.pathname === '/healthz') {
      const ready = deps.isReady();
      send(res, ready ? 200 : 503, { ok: ready, service: 'registry' }, false);
    } else if (req.method === 'GET') {
      void serveConsole(url.pathname, res, deps.console).then((served) => {
        if (!served)
          send(res, 404, { error: new WireError(ErrorCodes.notFound, `no route GET ${url.pathname}`).toJSON() }, false);
      });
    } else {
      send(
        res,
        404,
        { error: new WireError(ErrorCodes.notFound, `no route ${req.method} ${url.pathname}`).toJSON() },
        false,
      );
    }
  });
  deps.inbound.attach(server);
  return server;
}

/** `GET /v1/events`: the account's event stream, admitted like an action (rates) and held by its quotas while open. */
function eventsRoute(
  deps: HttpDeps,
  admission: Admission,
): (req: IncomingMessage, res: ServerResponse, url: URL) => void {
  const accounts = deps.actions.accounts;
  return (req, res, url) => {
    void deps.events.handle(
      req,
      res,
      url,
      async (envelopeBody) => {
        checkValueBounds(envelopeBody, 'envelope', BODY_LIMITS);
        const caller = await authenticate(parseEnvelope(envelopeBody), {
          redis: deps.redis,
          redisPrefix: deps.redisPrefix,
          accounts,
        });
        await admission.signer(caller.signer);
        return caller;
      },
      {
        admitAddress: () => admission.address(req),
        admitPeer: () => admission.peer(req),
        admitStream: (account) => admission.stream(account),
        boundAgents: (account, signer) => accounts.boundAgents(account, signer),
        retryAfter: retryAfterHeader,
        // The account's own key always holds it; a registered signer while its row keeps the role.
        stillHeld: async (c) => c.signer === c.account || (await accounts.signerRole(c.account, c.signer)) === c.role,
      },
    );
  };
}
