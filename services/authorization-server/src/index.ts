import type { IncomingMessage, ServerResponse } from 'node:http';
import { AS_METADATA_PATH, AUTHORIZE_PATH, CONTINUE_PATH, REVOKE_PATH, TOKEN_PATH } from '@mcpx/contracts';
import type { Db } from '@mcpx/db';
import { isRedisUnavailable, REDIS_RETRY_AFTER_MS, type RateLimit, type RateLimiter } from '@mcpx/shared-state';
import type { Logger } from '@mcpx/log';
import { SpanKind, clientTraceOrigin, withSpan, type Counter, type Meter, type Tracer } from '@mcpx/telemetry';
import { authorize, continueSignIn, type SignInFlowDeps } from './authorize.js';
import { signInPage, sendJson } from './pages.js';
import type { PendingSignInBounds } from './pending-sign-ins.js';
import { SignInsRepository } from './sign-ins.repository.js';
import { OPEN_CORS, revoke, token, type TokenDeps } from './token.js';

export interface AuthorizationServerDeps {
  db: Db;
  /** The outbound fetch (`@mcpx/outbound`): client ID metadata documents are fetched through it. */
  fetch: typeof globalThis.fetch;
  /** The authorization server's public URL, which is the issuer (known once it listens). */
  publicUrl: () => string;
  /** Where the console is (the registry's public URL), to which a new sign-in sends the browser; absent: the issuer. */
  consoleUrl?: () => string;
  log: Logger;
  tracer: Tracer;
  meter: Meter;
  /**
   * Per client address limits on the open steps (each authorize costs an outbound fetch): the
   * shared Redis buckets and the address a request comes from. Absent: no limit.
   */
  rates?: { limiter: RateLimiter; clientAddress: (req: IncomingMessage) => string };
  /** Pending sign-ins per client document, per requesting address and in all (the configuration's `quotas`; absent: none but the account's). */
  bounds?: PendingSignInBounds;
  /** The bounded body reader (`InboundGuard.read`), for the token and revocation forms. */
  readBody: TokenDeps['readBody'];
}

/** Authorization requests one client address may make: each fetches a metadata document. */
export const AUTHORIZE_PER_ADDRESS: RateLimit = { ratePerSecond: 2, burst: 120 };
/** Token requests one client address may make. */
export const TOKEN_PER_ADDRESS: RateLimit = { ratePerSecond: 10, burst: 200 };

/** Routes of the authorization server: true when the request was one of them (it is then answered). */
export type AuthorizationServerRoutes = (req: IncomingMessage, res: ServerResponse, url: URL) => boolean;

/** RFC 8414 metadata of the issuer. */
export function authorizationServerMetadata(issuer: string): Record<string, unknown> {
  return {
    issuer,
    authorization_endpoint: `${issuer}${AUTHORIZE_PATH}`,
    token_endpoint: `${issuer}${TOKEN_PATH}`,
    revocation_endpoint: `${issuer}${REVOKE_PATH}`,
    revocation_endpoint_auth_methods_supported: ['none'],
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none'],
    client_id_metadata_document_supported: true,
    authorization_response_iss_parameter_supported: true,
  };
}

/**
 * The OAuth 2.1 authorization server of the agent MCP endpoint: metadata
 * (`/.well-known/oauth-authorization-server`), the authorization request (a pending sign-in the
 * account owner decides in the console), the continue step back to the client and the token
 * endpoint. Clients identify by client ID metadata document URLs; there is no dynamic
 * registration. Each step is a span (`authorization-server <step>`) and is counted in
 * `mcpx_oauth_sign_ins_total{step, outcome}`; no code, token, verifier, cookie or nonce is ever
 * in a span, a metric, a log line or an error.
 */
export function createAuthorizationServer(deps: AuthorizationServerDeps): AuthorizationServerRoutes {
  const signIns = new SignInsRepository(deps.db, deps.bounds);
  const issuer = (): string => deps.publicUrl().replace(/\/+$/, '');
  const clientAddress = deps.rates?.clientAddress ?? ((req: IncomingMessage): string => req.socket.remoteAddress ?? '');
  const flow: SignInFlowDeps = { ...deps, signIns, issuer, clientAddress };
  const tokenDeps: TokenDeps = { signIns, log: deps.log, readBody: deps.readBody };
  const steps: Counter = deps.meter.createCounter('mcpx_oauth_sign_ins_total', {
    description: 'OAuth sign-ins to the agent endpoint: steps (authorize, continue, token, revoke) by outcome',
  });
  const step = (name: StepName, req: IncomingMessage, res: ServerResponse, run: () => Promise<string>): void =>
    runStep({ ...deps, steps }, name, req, res, run);

  return (req, res, url) => {
    const path = url.pathname;
    if (isMetadataPath(path, issuer())) {
      if (req.method === 'OPTIONS') preflight(res, 'GET');
      else if (req.method === 'GET')
        sendJson(res, 200, authorizationServerMetadata(issuer()), {
          'cache-control': 'public, max-age=300',
          ...OPEN_CORS,
        });
      else return false;
      return true;
    }
    if (path === AUTHORIZE_PATH && req.method === 'GET') {
      step('authorize', req, res, () => authorize(flow, req, res, url));
      return true;
    }
    if (path === CONTINUE_PATH && req.method === 'GET') {
      step('continue', req, res, () => continueSignIn(flow, req, res, url));
      return true;
    }
    // The token and revocation endpoints: a form POSTed, open to browsers' preflights.
    const form = path === TOKEN_PATH ? 'token' : path === REVOKE_PATH ? 'revoke' : undefined;
    if (form === undefined) return false;
    if (req.method === 'OPTIONS') preflight(res, 'POST');
    else if (req.method === 'POST')
      step(form, req, res, () => (form === 'token' ? token : revoke)(tokenDeps, req, res));
    else return false;
    return true;
  };
}

type StepName = 'authorize' | 'continue' | 'token' | 'revoke';

/**
 * The metadata's well-known path; an issuer with a path (behind a reverse proxy at /prefix) is
 * described at the well-known path followed by it (RFC 8414 §3.1).
 */
function isMetadataPath(path: string, issuer: string): boolean {
  return (
    path === AS_METADATA_PATH ||
    (path.startsWith(`${AS_METADATA_PATH}/`) &&
      URL.canParse(issuer) &&
      path.slice(AS_METADATA_PATH.length) === new URL(issuer).pathname)
  );
}

/**
 * Runs one step in its span (`authorization-server <step>`), after its address's limit (every step
 * but continue; revoke shares token's), and counts its outcome. A step that throws is logged and
 * answered 503 in its own kind (JSON for the token and revocation endpoints, a page otherwise).
 */
function runStep(
  deps: Pick<AuthorizationServerDeps, 'tracer' | 'log' | 'rates'> & { steps: Counter },
  name: StepName,
  req: IncomingMessage,
  res: ServerResponse,
  run: () => Promise<string>,
): void {
  void withSpan(
    deps.tracer,
    `authorization-server ${name}`,
    { 'mcpx.oauth_server.step': name },
    async (span) => {
      const outcome =
        (name === 'continue' ? undefined : await rateLimited(deps, name === 'revoke' ? 'token' : name, req, res)) ??
        (await run());
      span.setAttribute('mcpx.oauth_server.outcome', outcome);
      return outcome;
    },
    { kind: SpanKind.SERVER, ...clientTraceOrigin(req.headers) },
  )
    .then((outcome) => deps.steps.add(1, { step: name, outcome }))
    .catch((err: unknown) => {
      deps.steps.add(1, { step: name, outcome: 'error' });
      deps.log.error('oauth sign-in step failed', { step: name, err: err as Error });
      if (res.headersSent) {
        res.destroy();
        return;
      }
      if (name === 'token' || name === 'revoke')
        sendJson(
          res,
          503,
          { error: 'temporarily_unavailable', error_description: 'the authorization server could not answer; retry' },
          { 'cache-control': 'no-store', ...OPEN_CORS },
        );
      else
        signInPage(
          res,
          503,
          'Sign-in unavailable',
          'The authorization server could not handle this sign-in right now. Start it again from the client.',
        );
    });
}

/**
 * Over its address's limit: answered 429 with Retry-After (the outcome), else undefined. A limit
 * Redis cannot count refuses (the limiter says `refuse`): 503 with Retry-After, outcome
 * `unavailable`; admitting would let whoever can slow Redis guess codes and tokens unlimited.
 */
async function rateLimited(
  deps: Pick<AuthorizationServerDeps, 'rates'>,
  name: 'authorize' | 'token',
  req: IncomingMessage,
  res: ServerResponse,
): Promise<string | undefined> {
  if (deps.rates === undefined) return undefined;
  let decision: Awaited<ReturnType<RateLimiter['take']>>;
  try {
    decision = await deps.rates.limiter.take(
      `oauth-${name}`,
      deps.rates.clientAddress(req),
      name === 'authorize' ? AUTHORIZE_PER_ADDRESS : TOKEN_PER_ADDRESS,
    );
  } catch (err) {
    if (!isRedisUnavailable(err)) throw err;
    limitUnavailable(name, res);
    return 'unavailable';
  }
  if (decision.ok) return undefined;
  // Answered unread: the inbound guard closes the connection after the answer.
  const retry = { 'retry-after': String(Math.max(1, Math.ceil(decision.retryAfterMs / 1000))) };
  if (name === 'token')
    sendJson(
      res,
      429,
      {
        error: 'temporarily_unavailable',
        error_description: 'too many token requests from this address; retry later',
      },
      { 'cache-control': 'no-store', ...OPEN_CORS, ...retry },
    );
  else
    signInPage(
      res,
      429,
      'Too many sign-in requests',
      'Too many sign-in requests came from this address. Try again in a minute.',
      retry,
    );
  return 'rate_limited';
}

/** A step refused because its address's limit cannot be counted (Redis out of reach or full). */
function limitUnavailable(name: 'authorize' | 'token', res: ServerResponse): void {
  const retry = { 'retry-after': String(Math.ceil(REDIS_RETRY_AFTER_MS / 1000)) };
  if (name === 'token')
    sendJson(
      res,
      503,
      { error: 'temporarily_unavailable', error_description: 'the authorization server could not answer; retry' },
      { 'cache-control': 'no-store', ...OPEN_CORS, ...retry },
    );
  else
    signInPage(
      res,
      503,
      'Sign-in unavailable',
      'The authorization server could not handle this sign-in right now. Try again in a moment.',
      retry,
    );
}

/** A browser's CORS preflight of an open endpoint. */
function preflight(res: ServerResponse, methods: string): void {
  res.writeHead(204, {
    ...OPEN_CORS,
    'access-control-allow-methods': methods,
    'access-control-allow-headers': 'content-type, mcp-protocol-version',
    'access-control-max-age': '600',
    'content-length': 0,
  });
  res.end();
}
