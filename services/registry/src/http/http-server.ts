import type { Redis } from 'ioredis';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createHash } from 'node:crypto';
import { SpanKind, type Counter, type Histogram, type Meter, type Tracer } from '@opentelemetry/api';
import { BODY_LIMITS, ErrorCodes, WireError, boundInField, checkValueBounds, decodeStrict, encodePayload, invalidInput, openApiDocument, toWireError } from '@mcpx/contracts';
import { serveConsole, type ConsoleSettings } from '@mcpx/console';
import { InboundGuard, refusalMessage, type InboundRefusal } from '@mcpx/inbound';
import type { Logger } from '@mcpx/log';
import { clientTraceOrigin, withSpan } from '@mcpx/telemetry';
import { DEFAULT_QUOTAS, type QuotaSettings } from '@mcpx/config';
import { LeaseQuota, RateLimiter } from '@mcpx/locks';
import { AccountQuotas, QuotaKinds, quotaExceeded, rateLimited } from '../shared/quotas.js';
import { TrustedProxies } from '@mcpx/config/trusted-proxies';
import { dispatchAction, isKnownAction, type ActionDeps } from '../actions/index.js';
import { dependencyUnavailable } from './dependency-errors.js';
import { authenticate, parseEnvelope } from './envelope-auth.js';
import type { EventStream } from './event-stream.js';
import { OAUTH_CALLBACK_PATH, OAUTH_CLIENT_METADATA_PATH, OAUTH_START_PATH } from '../credentials/oauth/paths.js';
import { AS_BASE_PATH } from '../authorization-server/paths.js';
import { NO_STORE_HEADERS, sendJson } from '../authorization-server/pages.js';
import { OPEN_CORS } from '../authorization-server/token.js';

export const MAX_BODY_BYTES = 1024 * 1024;

export interface HttpDeps {
  actions: ActionDeps;
  redis: Redis;
  redisPrefix: string;
  /** The database's port: a refused connection to it is Postgres's outage (`unavailable`). */
  postgresPort?: number;
  log: Logger;
  tracer: Tracer;
  meter: Meter;
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
  /** The authorization server of the agent endpoint's OAuth sign-in: true when it answered the route (absent: none). */
  authorizationServer?: (req: IncomingMessage, res: ServerResponse, url: URL) => boolean;
}

function bodyTooLarge(): WireError {
  return invalidInput('body', `must be at most ${MAX_BODY_BYTES} bytes`, { limit: MAX_BODY_BYTES, status: 413 });
}

/**
 * A refusal of the inbound bounds (`@mcpx/inbound`: deadline 408, budget 503, too large 413) in
 * the registry's shapes: on the authorization server's routes an OAuth error
 * (`invalid_request`, or `temporarily_unavailable` for the budget), elsewhere the API's typed
 * error (`invalid_input` naming `body` and the bound, or `unavailable` with its wait).
 */
export function answerInboundRefusal(req: IncomingMessage, res: ServerResponse, r: InboundRefusal): void {
  const message = refusalMessage(r);
  if ((req.url ?? '').startsWith(`${AS_BASE_PATH}/`)) {
    sendJson(res, r.status, { error: r.reason === 'budget' ? 'temporarily_unavailable' : 'invalid_request', error_description: message }, { ...NO_STORE_HEADERS, ...OPEN_CORS });
    return;
  }
  const wire =
    r.reason === 'budget'
      ? new WireError(ErrorCodes.unavailable, message, { retryAfterMs: (r.retryAfterSeconds ?? 1) * 1000 })
      : r.reason === 'too_large'
        ? bodyTooLarge()
        : invalidInput('body', message, { bound: r.bound.name, limit: r.bound.limit, status: r.status });
  send(res, r.status, { error: wire.toJSON() }, isCbor(req));
}

/**
 * Decodes an action body, bounded the same way whatever its format: CBOR through the strict
 * decoder (no shared-value or other tags, no indefinite lengths, depth, items), JSON parsed and
 * then held to the same depth and item bounds. Both refusals are `invalid_input` naming `body`, or
 * the action's field a depth or item bound was crossed in (`arguments`).
 */
function decodeBody(raw: Buffer, cbor: boolean): unknown {
  try {
    return decodeBodyValue(raw, cbor);
  } catch (err) {
    // Too deep or too many items inside an action's field (`action.arguments`) names that field.
    throw boundInField(err, 1);
  }
}

function decodeBodyValue(raw: Buffer, cbor: boolean): unknown {
  if (cbor) return decodeStrict(raw, 'body', BODY_LIMITS);
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    throw invalidInput('body', 'is not JSON');
  }
  checkValueBounds(body, 'body', BODY_LIMITS);
  return body;
}

function isCbor(req: IncomingMessage): boolean {
  return (req.headers['content-type'] ?? '').startsWith('application/cbor');
}

/** `Retry-After` (whole seconds, at least 1) of an error that says how long to wait. */
function retryAfterHeader(wire: WireError): Record<string, string> {
  const ms = wire.retryAfterMs;
  return ms === undefined ? {} : { 'retry-after': String(Math.max(1, Math.ceil(ms / 1000))) };
}

/** No proxy is trusted: the client's address is the socket's peer. */
const NO_TRUSTED_PROXIES = new TrustedProxies([]);

const OPENAPI_CACHE = 'public, max-age=3600';

/** The OpenAPI document's bytes and their ETag, built once per server. */
function openApiBytes(): { bytes: Buffer; etag: string } {
  const bytes = Buffer.from(JSON.stringify(openApiDocument()));
  return { bytes, etag: `"${createHash('sha256').update(bytes).digest('base64url').slice(0, 27)}"` };
}

function send(res: ServerResponse, status: number, body: unknown, cbor: boolean): void {
  const bytes = cbor ? Buffer.from(encodePayload(body)) : Buffer.from(JSON.stringify(body));
  res.writeHead(status, { 'content-type': cbor ? 'application/cbor' : 'application/json', 'content-length': bytes.length });
  res.end(bytes);
}

/** The registry's HTTP surface: the signed action API, the event stream, health and metrics. */
export function createHttpServer(deps: HttpDeps): Server {
  const requests: Counter = deps.meter.createCounter('mcpx_actions_total', { description: 'Actions by type and result code' });
  const duration: Histogram = deps.meter.createHistogram('mcpx_action_duration_ms', { unit: 'ms', description: 'Action time' });
  const refused: Counter = deps.meter.createCounter('mcpx_action_bodies_refused_total', { description: 'Action bodies the decoder refused, by format and rule' });
  const limits = deps.quotas ?? DEFAULT_QUOTAS;
  const quotas = new AccountQuotas(limits, deps.meter);
  let lastLimitWarning = 0;
  const limitError = (err: Error): void => {
    // A limit that cannot reach Redis admits; say so now and then, not per request.
    if (Date.now() - lastLimitWarning < 10_000) return;
    lastLimitWarning = Date.now();
    deps.log.warn('rate limits and stream quotas unavailable, admitting', { err });
  };
  const rates = new RateLimiter(deps.redis, deps.redisPrefix, { onError: limitError });
  const streams = new LeaseQuota(deps.redis, deps.redisPrefix, { onError: limitError });
  const actionDeps: ActionDeps = { ...deps.actions, quotas };

  /** Refuses a client address over its rate before anything costly (decoding, signature, Redis nonce). */
  async function admitAddress(req: IncomingMessage): Promise<void> {
    const decision = await rates.take('address', (deps.trustedProxies ?? NO_TRUSTED_PROXIES).clientAddress(req), limits.actionsPerAddress);
    if (decision.ok) return;
    quotas.rejected(QuotaKinds.actionsPerAddress);
    throw rateLimited(QuotaKinds.actionsPerAddress, decision.retryAfterMs, 'too many requests from this address; retry later');
  }

  /** Refuses a signer over its rate, once its signature is known good (a forger cannot drain another's bucket). */
  async function admitSigner(signer: string): Promise<void> {
    const decision = await rates.take('signer', signer, limits.actionsPerSigner);
    if (decision.ok) return;
    quotas.rejected(QuotaKinds.actionsPerSigner);
    throw rateLimited(QuotaKinds.actionsPerSigner, decision.retryAfterMs, 'too many actions from this signer; retry later');
  }

  /** Event streams this process holds (admitted, until released). */
  let streamsHere = 0;
  /** A full process says to come back after this long (streams end when their clients go). */
  const PROCESS_STREAMS_RETRY_MS = 5_000;

  /**
   * Holds one of this process's event-stream slots and one of the client address's (across
   * instances) while its stream is open: taken before the envelope is read, so a flood under
   * fresh keys (each one an account) costs no signature check past its address's bound.
   */
  async function admitPeer(req: IncomingMessage): Promise<() => void> {
    const maxHere = limits.eventStreamsPerProcess;
    if (maxHere > 0 && streamsHere >= maxHere) {
      quotas.rejected(QuotaKinds.eventStreamsPerProcess);
      throw rateLimited(QuotaKinds.eventStreamsPerProcess, PROCESS_STREAMS_RETRY_MS, `this registry instance holds its ${maxHere} open event streams; retry later`, maxHere);
    }
    streamsHere++;
    let freed = false;
    const free = (): void => {
      if (!freed) streamsHere--;
      freed = true;
    };
    const max = limits.eventStreamsPerAddress;
    const address = (deps.trustedProxies ?? NO_TRUSTED_PROXIES).clientAddress(req);
    const decision = await streams.acquire('event-streams-address', address, max).catch((err: unknown) => {
      free();
      throw err;
    });
    if (!decision.ok) {
      free();
      quotas.rejected(QuotaKinds.eventStreamsPerAddress);
      throw rateLimited(QuotaKinds.eventStreamsPerAddress, decision.retryAfterMs, `this address holds its ${max} open event streams; close one first`, max);
    }
    return () => {
      free();
      decision.lease.release();
    };
  }

  /** Holds one of the account's event-stream slots while its stream is open. */
  async function admitStream(account: string): Promise<() => void> {
    const max = limits.eventStreamsPerAccount;
    const decision = await streams.acquire('event-streams', account, max);
    if (decision.ok) return () => decision.lease.release();
    quotas.rejected(QuotaKinds.eventStreams);
    throw quotaExceeded('envelope', QuotaKinds.eventStreams, max, `the account holds its ${max} open event streams; close one first`, decision.retryAfterMs);
  }

  async function handleAction(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const cbor = isCbor(req);
    const started = performance.now();
    let type = 'unknown';
    try {
      // The credential is inside the signed body: the address's rate first, then the bounded read
      // (a refusal is answered unread and the connection closed after it).
      await admitAddress(req);
      const raw = await deps.inbound.read(req, res, MAX_BODY_BYTES);
      // Refused (answered by the guard: too large, too slow, over the budget) or the client went away.
      if (raw === undefined) return;
      let body: unknown;
      try {
        body = decodeBody(raw, cbor);
      } catch (err) {
        // Which rule refused a body, by a fixed set of labels (the rules), never the bytes.
        const rule = err instanceof WireError && typeof err.details.rule === 'string' ? err.details.rule : 'not_json';
        refused.add(1, { format: cbor ? 'cbor' : 'json', rule });
        throw err;
      }
      const envelope = parseEnvelope(body);
      // Metric labels and span names take known action types only: unauthenticated input must
      // not mint new series.
      type = isKnownAction(String(envelope.action.type)) ? String(envelope.action.type) : 'unknown';
      const result = await withSpan(
        deps.tracer,
        `action ${type}`,
        { 'mcpx.action': type, 'mcp.account': envelope.account },
        async () => {
          const caller = await authenticate(envelope, { redis: deps.redis, redisPrefix: deps.redisPrefix, accounts: deps.actions.accounts });
          await admitSigner(caller.signer);
          return dispatchAction(actionDeps, caller, envelope.action);
        },
        // A new trace linked to the client's traceparent, never its child (SECURITY.md).
        { kind: SpanKind.SERVER, ...clientTraceOrigin(req.headers) },
      );
      requests.add(1, { action: type, code: 'ok' });
      send(res, 200, result, cbor);
    } catch (err) {
      // A store's outage is said at once and typed (`unavailable`, the store named); any other
      // fault that is not a wire error stays `internal`.
      const down = dependencyUnavailable(err, { redisStatus: deps.redis.status, ...(deps.postgresPort !== undefined ? { postgresPort: deps.postgresPort } : {}) });
      const wire = down ?? toWireError(err);
      if (down !== undefined) deps.log.warn('action refused: a store is unavailable', { action: type, dependency: down.details.dependency });
      else if (!(err instanceof WireError)) deps.log.error('action failed', { action: type, err: err as Error });
      requests.add(1, { action: type, code: wire.code });
      // A body over the limit is 413 (Payload Too Large), still an invalid_input naming `body`.
      const status = wire.code === ErrorCodes.invalidInput && wire.details.status === 413 ? 413 : wire.httpStatus;
      if (status === 413) res.setHeader('connection', 'close');
      for (const [k, v] of Object.entries(retryAfterHeader(wire))) res.setHeader(k, v);
      send(res, status, { error: wire.toJSON() }, cbor);
    } finally {
      duration.record(performance.now() - started, { action: type });
    }
  }

  const openapi = openApiBytes();
  const server = createServer(InboundGuard.serverOptions, (req, res) => {
    // A socket over its address's cap is closed; a body's deadline starts.
    if (!deps.inbound.admit(req, res)) return;
    const url = new URL(req.url ?? '/', 'http://registry');
    if (req.method === 'POST' && url.pathname === '/v1/actions') {
      void handleAction(req, res);
    } else if (deps.authorizationServer?.(req, res, url) === true) {
      // answered: OAuth metadata, authorize, continue, token
    } else if (req.method === 'GET' && url.pathname === '/v1/events') {
      void deps.events.handle(
        req,
        res,
        url,
        async (envelopeBody) => {
          checkValueBounds(envelopeBody, 'envelope', BODY_LIMITS);
          const caller = await authenticate(parseEnvelope(envelopeBody), { redis: deps.redis, redisPrefix: deps.redisPrefix, accounts: deps.actions.accounts });
          await admitSigner(caller.signer);
          return caller;
        },
        {
          admitAddress: () => admitAddress(req),
          admitPeer: () => admitPeer(req),
          admitStream,
          boundAgents: (account, signer) => deps.actions.accounts.boundAgents(account, signer),
          retryAfter: retryAfterHeader,
          // The account's own key always holds it; a registered signer while its row keeps the role.
          stillHeld: async (c) => c.signer === c.account || (await deps.actions.accounts.signerRole(c.account, c.signer)) === c.role,
        },
      );
    } else if (req.method === 'GET' && url.pathname === OAUTH_CALLBACK_PATH && deps.oauthCallback) {
      void deps.oauthCallback(req, res, url);
    } else if (req.method === 'GET' && url.pathname === OAUTH_START_PATH && deps.oauthStart) {
      void deps.oauthStart(req, res, url);
    } else if (req.method === 'GET' && url.pathname === OAUTH_CLIENT_METADATA_PATH && deps.oauthClientMetadata) {
      deps.oauthClientMetadata(req, res);
    } else if (req.method === 'GET' && url.pathname === '/v1/openapi.json') {
      // The action API's OpenAPI 3.1 document, generated from the action map: unauthenticated, cacheable.
      if (req.headers['if-none-match'] === openapi.etag) res.writeHead(304, { etag: openapi.etag, 'cache-control': OPENAPI_CACHE }).end();
      else res.writeHead(200, { 'content-type': 'application/json', 'content-length': openapi.bytes.length, etag: openapi.etag, 'cache-control': OPENAPI_CACHE }).end(openapi.bytes);
    } else if (req.method === 'GET' && url.pathname === '/healthz') {
      const ready = deps.isReady();
      send(res, ready ? 200 : 503, { ok: ready, service: 'registry' }, false);
    } else if (req.method === 'GET') {
      void serveConsole(url.pathname, res, deps.console).then((served) => {
        if (!served) send(res, 404, { error: new WireError(ErrorCodes.notFound, `no route GET ${url.pathname}`).toJSON() }, false);
      });
    } else {
      send(res, 404, { error: new WireError(ErrorCodes.notFound, `no route ${req.method} ${url.pathname}`).toJSON() }, false);
    }
  });
  deps.inbound.attach(server);
  return server;
}
