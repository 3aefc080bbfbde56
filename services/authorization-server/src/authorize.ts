import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  AS_BASE_PATH,
  CONSOLE_PATH,
  CONSOLE_SIGN_IN_FRAGMENT,
  SIGN_IN_ID_RE,
  randomSignInSecret,
  signInSecretHash,
} from '@mcpx/contracts';
import type { Db } from '@mcpx/db';
import type { Logger } from '@mcpx/log';
import { ClientMetadataError, fetchClientMetadata } from './client-metadata.js';
import { redirect, signInPage } from './pages.js';
import { PendingSignInLimits, requesterHash, type PendingSignInLimit } from './pending-sign-ins.js';
import { SIGN_IN_PENDING_MS } from './sign-in-secrets.js';
import type { SignInRow, SignInsRepository } from './sign-ins.repository.js';

/** RFC 7636: 43 to 128 unreserved characters (a verifier; a S256 challenge is exactly 43). */
export const PKCE_VALUE_RE = /^[A-Za-z0-9._~-]{43,128}$/;
const STATE_MAX = 1_024;
const SCOPE_MAX = 512;
const SECRET_RE = /^[A-Za-z0-9_-]{43}$/;
/** `<origin>[/prefix]/v1/agents/<agent id>/mcp`: the agent endpoint's URL, the agent by its id. */
const RESOURCE_PATH_RE = /\/v1\/agents\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\/mcp\/?$/;

export interface SignInFlowDeps {
  db: Db;
  signIns: SignInsRepository;
  /** The outbound fetch (SSRF-safe, bounded): client ID metadata documents are fetched through it. */
  fetch: typeof globalThis.fetch;
  /** The issuer: the authorization server's public URL (no trailing slash). */
  issuer: () => string;
  /** Where the console is (the registry's public URL): the owner decides there. Absent: the issuer. */
  consoleUrl?: () => string;
  /** The address a request comes from (the socket's peer, or what trusted proxies say). */
  clientAddress: (req: IncomingMessage) => string;
  log: Logger;
}

/** What a refused sign-in's client is told, per limit (the limit named, for its logs). */
const PENDING_REFUSALS: Record<PendingSignInLimit, string> = {
  [PendingSignInLimits.account]: 'the account has too many sign-ins waiting for a decision',
  [PendingSignInLimits.client]: 'this client has too many sign-ins waiting for a decision in this account',
  [PendingSignInLimits.address]: 'too many sign-ins requested from this address are waiting for a decision',
  [PendingSignInLimits.total]: 'the authorization server holds too many sign-ins waiting for a decision',
};

/** An OAuth error said to the client through its redirect URI (RFC 6749 §4.1.2.1, with RFC 9207 `iss`). */
class RedirectableError extends Error {
  constructor(
    readonly error: string,
    readonly description: string,
    /** The step's outcome when it is not the error itself (a refusal's limit). */
    readonly outcome: string = error,
  ) {
    super(description);
  }
}

/** A parameter given once at most (OAuth 2.1: parameters must not be repeated). */
function single(params: URLSearchParams, name: string): string | undefined {
  const all = params.getAll(name);
  if (all.length > 1) throw new RedirectableError('invalid_request', `${name} is repeated`);
  return all[0];
}

/** Where the binding cookie is sent: the authorization server's paths under the public URL's own path. */
export function cookiePath(issuer: string): string {
  const path = URL.canParse(issuer) ? new URL(issuer).pathname.replace(/\/+$/, '') : '';
  return `${path}${AS_BASE_PATH}`;
}

/** The binding cookie of one sign-in: one per sign-in, so a browser may hold several. */
export function cookieName(id: string): string {
  return `mcpx_signin_${id.slice(3, 19)}`;
}

function cookieHeader(issuer: string, id: string, value: string, maxAgeSeconds: number): string {
  const secure = issuer.startsWith('https:') ? '; Secure' : '';
  return `${cookieName(id)}=${value}; Path=${cookiePath(issuer)}; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Lax${secure}`;
}

function readCookie(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** The client's redirect URI with the answer's parameters (and RFC 9207 `iss`) added. */
function answerUrl(redirectUri: string, params: Record<string, string | null>, issuer: string): string {
  const u = new URL(redirectUri);
  for (const [k, v] of Object.entries(params)) if (v !== null) u.searchParams.set(k, v);
  u.searchParams.set('iss', issuer);
  return u.toString();
}

/**
 * `GET /v1/oauth-server/authorize`. Until the client and its redirect URI are known good (its
 * metadata document fetched and checked, the redirect URI listed in it exactly) a refusal is a
 * page, never a redirect; after that it goes back to the client with `error` and `iss`. PKCE is
 * S256 only; `resource` must be an agent endpoint URL naming an existing agent by its id. The
 * request becomes a pending sign-in of the agent's account, the browser gets its HttpOnly
 * binding cookie and is sent to the console, where the owner decides. Returns the outcome.
 */
export async function authorize(
  deps: SignInFlowDeps,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
): Promise<string> {
  const params = url.searchParams;
  const known = await knownClient(deps, params, res);
  if (typeof known === 'string') return known;
  const { client, redirectUri } = known;
  const issuer = deps.issuer();
  let state: string | null = null;
  try {
    state = requestState(params);
    const request = requestedGrant(params);
    const agent = await resolveResource(deps.db, request.resource);
    const cookie = randomSignInSecret();
    const id = await createSignIn(deps, req, { ...request, client, redirectUri, state, agent, cookie });
    redirect(res, consoleLink(deps, id), {
      'set-cookie': cookieHeader(issuer, id, cookie, Math.floor(SIGN_IN_PENDING_MS / 1000)),
    });
    deps.log.info('oauth sign-in requested', {
      account: agent.account,
      agent: agent.id,
      signIn: id,
      client: client.clientId,
    });
    return 'pending';
  } catch (err) {
    if (!(err instanceof RedirectableError)) throw err;
    redirect(res, answerUrl(redirectUri, { error: err.error, error_description: err.description, state }, issuer));
    return err.outcome;
  }
}

type ClientMetadata = Awaited<ReturnType<typeof fetchClientMetadata>>;

/**
 * The client and its redirect URI, known good: its metadata document fetched and checked, the
 * redirect URI listed in it exactly. Until then a refusal is a page (answered here; the outcome).
 */
async function knownClient(
  deps: SignInFlowDeps,
  params: URLSearchParams,
  res: ServerResponse,
): Promise<{ client: ClientMetadata; redirectUri: string } | string> {
  let clientId: string | undefined;
  let redirectUri: string | undefined;
  try {
    clientId = single(params, 'client_id');
    redirectUri = single(params, 'redirect_uri');
  } catch {
    signInPage(res, 400, 'Sign-in request not valid', 'client_id or redirect_uri is repeated.');
    return 'invalid_request';
  }
  if (clientId === undefined || clientId === '') {
    signInPage(
      res,
      400,
      'Sign-in request not valid',
      'client_id is missing: it must be the https URL of the client ID metadata document.',
    );
    return 'invalid_client';
  }
  if (redirectUri === undefined || redirectUri === '') {
    signInPage(res, 400, 'Sign-in request not valid', 'redirect_uri is missing.');
    return 'invalid_request';
  }
  let client;
  try {
    client = await fetchClientMetadata(deps.fetch, clientId);
  } catch (err) {
    if (!(err instanceof ClientMetadataError)) throw err;
    signInPage(res, 400, 'Sign-in request not valid', `The client could not be identified: ${err.message}.`);
    return 'invalid_client';
  }
  if (!client.redirectUris.includes(redirectUri)) {
    signInPage(
      res,
      400,
      'Sign-in request not valid',
      'redirect_uri is not one of the redirect_uris of the client metadata document.',
    );
    return 'invalid_redirect_uri';
  }
  return { client, redirectUri };
}

/** The client's `state`, given back with every answer; one too long (or repeated) is refused and not echoed. */
function requestState(params: URLSearchParams): string | null {
  const state = single(params, 'state') ?? null;
  if (state !== null && state.length > STATE_MAX)
    throw new RedirectableError('invalid_request', `state must be at most ${STATE_MAX} characters`);
  return state;
}

/** What the client asks for: a code (PKCE S256 only), a bounded scope, an agent endpoint as the resource. */
function requestedGrant(params: URLSearchParams): { challenge: string; scope: string | null; resource: string } {
  if (single(params, 'response_type') !== 'code')
    throw new RedirectableError('unsupported_response_type', 'response_type must be code');
  const method = single(params, 'code_challenge_method');
  const challenge = single(params, 'code_challenge');
  if (challenge === undefined) throw new RedirectableError('invalid_request', 'code_challenge is required (PKCE S256)');
  if (method !== 'S256')
    throw new RedirectableError('invalid_request', 'code_challenge_method must be S256 (plain is not supported)');
  if (!/^[A-Za-z0-9_-]{43}$/.test(challenge))
    throw new RedirectableError('invalid_request', 'code_challenge must be a base64url SHA-256 (43 characters)');
  const scope = single(params, 'scope') ?? null;
  if (scope !== null && scope.length > SCOPE_MAX)
    throw new RedirectableError('invalid_scope', `scope must be at most ${SCOPE_MAX} characters`);
  const resource = single(params, 'resource');
  if (resource === undefined)
    throw new RedirectableError('invalid_target', 'resource is required: the agent endpoint URL (RFC 8707)');
  return { challenge, scope, resource };
}

/**
 * Records the pending sign-in the owner decides, bound to the browser's cookie and the requesting
 * address; over a pending limit it is refused back to the client, the limit named. Returns its id.
 */
async function createSignIn(
  deps: SignInFlowDeps,
  req: IncomingMessage,
  r: ReturnType<typeof requestedGrant> & {
    client: ClientMetadata;
    redirectUri: string;
    state: string | null;
    agent: { id: string; account: string };
    cookie: string;
  },
): Promise<string> {
  const created = await deps.signIns.createPending({
    account: r.agent.account,
    agent: r.agent.id,
    clientId: r.client.clientId,
    clientName: r.client.clientName,
    redirectUri: r.redirectUri,
    resource: r.resource,
    scope: r.scope,
    state: r.state,
    codeChallenge: r.challenge,
    browserHash: signInSecretHash(r.cookie),
    requesterHash: requesterHash(deps.clientAddress(req)),
  });
  if (!('refused' in created)) return created.id;
  deps.log.info('oauth sign-in refused: too many pending', {
    account: r.agent.account,
    agent: r.agent.id,
    limit: created.refused,
    client: r.client.clientId,
  });
  throw new RedirectableError(
    'temporarily_unavailable',
    `${PENDING_REFUSALS[created.refused]} (${created.refused}); try again later`,
    created.refused,
  );
}

/** Where the owner decides on sign-in `id`: the console (on the registry's public URL, else the issuer's). */
function consoleLink(deps: SignInFlowDeps, id: string): string {
  const base = (deps.consoleUrl?.() ?? deps.issuer()).replace(/\/+$/, '');
  return `${base}${CONSOLE_PATH}#${CONSOLE_SIGN_IN_FRAGMENT}${id}`;
}

/** The agent a `resource` names (RFC 8707: absolute, no fragment), by the id in its path. */
async function resolveResource(db: Db, resource: string): Promise<{ id: string; account: string }> {
  if (resource.length > 2_048 || !URL.canParse(resource))
    throw new RedirectableError('invalid_target', 'resource must be an absolute URL');
  const u = new URL(resource);
  if (u.hash !== '' || !/^https?:$/.test(u.protocol))
    throw new RedirectableError('invalid_target', 'resource must be an http(s) URL without a fragment');
  const m = RESOURCE_PATH_RE.exec(u.pathname);
  if (m === null)
    throw new RedirectableError(
      'invalid_target',
      'resource must be an agent endpoint URL naming the agent by its id: <endpoint>/v1/agents/<agent id>/mcp',
    );
  const row = await db
    .selectFrom('registry.agents')
    .select(['id', 'account_id'])
    .where('id', '=', m[1] as string)
    .executeTakeFirst();
  if (row === undefined) throw new RedirectableError('invalid_target', 'resource names no agent');
  return { id: row.id, account: row.account_id };
}

/**
 * `GET /v1/oauth-server/continue?id=…&nonce=…`: after the owner's decision, the browser goes on
 * to the client. It must be the browser that started the sign-in (its cookie) carrying the
 * approver's nonce (given only to the signed decision): a sign-in link opened in another
 * browser, or a decision made elsewhere, completes nothing. Approved: the client's redirect URI
 * with a single-use code, `state` and `iss`; denied: `error=access_denied`.
 */
export async function continueSignIn(
  deps: SignInFlowDeps,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
): Promise<string> {
  const id = url.searchParams.get('id') ?? '';
  const nonce = url.searchParams.get('nonce') ?? '';
  if (!SIGN_IN_ID_RE.test(id) || !SECRET_RE.test(nonce)) {
    signInPage(res, 400, 'Sign-in link not valid', 'This sign-in link is not one of this authorization server.');
    return 'malformed';
  }
  const issuer = deps.issuer();
  const cookie = readCookie(req.headers.cookie, cookieName(id));
  const clear = { 'set-cookie': cookieHeader(issuer, id, '', 0) };
  const done =
    cookie !== undefined && SECRET_RE.test(cookie)
      ? await deps.signIns.continueDecided(id, signInSecretHash(cookie), signInSecretHash(nonce))
      : undefined;
  if (done !== undefined) {
    const row: SignInRow = done.row;
    if (done.code !== undefined) {
      redirect(res, answerUrl(row.redirect_uri, { code: done.code, state: row.state }, issuer), clear);
      deps.log.info('oauth sign-in approved: code issued', {
        account: row.account_id,
        agent: row.agent_id,
        signIn: row.id,
      });
      return 'code_issued';
    }
    redirect(
      res,
      answerUrl(
        row.redirect_uri,
        { error: 'access_denied', error_description: 'the account owner denied the sign-in', state: row.state },
        issuer,
      ),
      clear,
    );
    deps.log.info('oauth sign-in denied', { account: row.account_id, agent: row.agent_id, signIn: row.id });
    return 'denied';
  }
  const row = await deps.signIns.find(id);
  if (
    row === undefined ||
    row.expires_at.getTime() <= Date.now() ||
    !['pending', 'approved', 'denied'].includes(row.status)
  ) {
    signInPage(
      res,
      400,
      'Sign-in link not valid',
      'This sign-in has expired or was already completed. Start it again from the client.',
    );
    return 'unknown';
  }
  if (row.status === 'pending') {
    signInPage(res, 409, 'Sign-in not decided', 'The account owner has not decided on this sign-in yet.');
    return 'pending';
  }
  signInPage(
    res,
    403,
    'Sign-in not completed',
    'This sign-in was started in another browser, or decided elsewhere: it completes only in the browser that started it, after a decision made there. Start it again from the client in this browser.',
  );
  return 'other_browser';
}
