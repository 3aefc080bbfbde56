import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '@mcpx/log';
import { PKCE_VALUE_RE } from './authorize.js';
import { NO_STORE_HEADERS, sendJson } from './pages.js';
import { GrantRefused, type IssuedTokens } from './sign-in-secrets.js';
import type { SignInRow, SignInsRepository } from './sign-ins.repository.js';

/** The largest token request read (a few short parameters). */
export const MAX_TOKEN_REQUEST_BYTES = 16 * 1024;

/** CORS for browser-based clients: no cookies are involved, so any origin may call. */
export const OPEN_CORS = { 'access-control-allow-origin': '*' } as const;

export interface TokenDeps {
  signIns: SignInsRepository;
  log: Logger;
  /** The bounded body reader (`InboundGuard.read`): undefined when it refused (and answered) or the client went away. */
  readBody: (req: IncomingMessage, res: ServerResponse, maxBytes: number) => Promise<Buffer | undefined>;
}

/** An OAuth error of the token endpoint (RFC 6749 §5.2). */
class TokenError extends Error {
  constructor(
    readonly error: string,
    readonly description: string,
    readonly status = 400,
  ) {
    super(description);
  }
}

/**
 * The form of a token or revocation request. Its type and declared length are checked before a
 * byte is read; the body is read by the process's bounded reader (`@mcpx/inbound`: its deadline
 * and the process's budget), which answers its own refusals: then undefined.
 */
async function readForm(
  deps: TokenDeps,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<URLSearchParams | undefined> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded')
    throw new TokenError('invalid_request', 'the body must be application/x-www-form-urlencoded');
  if (Number(req.headers['content-length'] ?? 0) > MAX_TOKEN_REQUEST_BYTES)
    throw new TokenError('invalid_request', `the body must be at most ${MAX_TOKEN_REQUEST_BYTES} bytes`);
  const raw = await deps.readBody(req, res, MAX_TOKEN_REQUEST_BYTES);
  return raw === undefined ? undefined : new URLSearchParams(raw.toString('utf8'));
}

function param(form: URLSearchParams, name: string, required: true): string;
function param(form: URLSearchParams, name: string, required: false): string | undefined;
function param(form: URLSearchParams, name: string, required: boolean): string | undefined {
  const all = form.getAll(name);
  if (all.length > 1) throw new TokenError('invalid_request', `${name} is repeated`);
  const v = all[0];
  if ((v === undefined || v === '') && required) throw new TokenError('invalid_request', `${name} is required`);
  return v === '' ? undefined : v;
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function s256(verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url');
}

/** The binding checks of a grant: the same client (and redirect, verifier, resource for a code). */
function checkClient(row: SignInRow, clientId: string, resource: string | undefined): void {
  if (row.client_id !== clientId) throw new GrantRefused('mismatch', 'the grant was issued to another client_id');
  if (resource !== undefined && resource !== row.resource)
    throw new GrantRefused('mismatch', 'resource is not the one the grant was issued for');
}

function tokenResponse(t: IssuedTokens): Record<string, unknown> {
  return {
    access_token: t.accessToken,
    token_type: 'Bearer',
    expires_in: t.expiresInSeconds,
    refresh_token: t.refreshToken,
    ...(t.signIn.scope !== null ? { scope: t.signIn.scope } : {}),
  };
}

/**
 * `POST /v1/oauth-server/revoke` (RFC 7009): `token` (an access or a refresh token) and the
 * public client's `client_id`. A live sign-in of that client ends; the answer is 200 whatever the
 * token was (it says nothing about tokens it does not know). Returns the outcome.
 */
export async function revoke(deps: TokenDeps, req: IncomingMessage, res: ServerResponse): Promise<string> {
  const headers = { ...NO_STORE_HEADERS, ...OPEN_CORS };
  try {
    const form = await readForm(deps, req, res);
    if (form === undefined) return 'body_refused';
    const tokenValue = param(form, 'token', true);
    const clientId = param(form, 'client_id', true);
    const ended = await deps.signIns.revokeByToken(tokenValue, clientId);
    res.writeHead(200, { ...headers, 'content-length': 0 });
    res.end();
    if (ended) deps.log.info('oauth sign-in ended by its client');
    return ended ? 'revoked' : 'unknown';
  } catch (err) {
    if (err instanceof TokenError) {
      sendJson(res, err.status, { error: err.error, error_description: err.description }, headers);
      return err.error;
    }
    throw err;
  }
}

/**
 * `POST /v1/oauth-server/token`: the `authorization_code` grant (the code once, within 60 s, with
 * the client id, redirect URI, PKCE verifier and resource it was issued for) and the
 * `refresh_token` grant (rotated; a spent one revokes the sign-in). Public clients only (no
 * client authentication). Answers are never cached; nothing secret is logged. Returns the outcome.
 */
export async function token(deps: TokenDeps, req: IncomingMessage, res: ServerResponse): Promise<string> {
  const headers = { ...NO_STORE_HEADERS, ...OPEN_CORS };
  try {
    const form = await readForm(deps, req, res);
    if (form === undefined) return 'body_refused';
    const grantType = param(form, 'grant_type', true);
    const clientId = param(form, 'client_id', true);
    const resource = param(form, 'resource', false);
    let issued: IssuedTokens;
    if (grantType === 'authorization_code') {
      const code = param(form, 'code', true);
      const redirectUri = param(form, 'redirect_uri', true);
      const verifier = param(form, 'code_verifier', true);
      if (!PKCE_VALUE_RE.test(verifier))
        throw new TokenError('invalid_request', 'code_verifier must be 43 to 128 unreserved characters');
      issued = await deps.signIns.redeem(code, (row) => {
        checkClient(row, clientId, resource);
        if (row.redirect_uri !== redirectUri)
          throw new GrantRefused('mismatch', 'redirect_uri is not the one the code was issued for');
        if (!sameText(s256(verifier), row.code_challenge))
          throw new GrantRefused('mismatch', 'code_verifier does not match the code_challenge');
      });
      deps.log.info('oauth sign-in: tokens issued', {
        account: issued.signIn.account_id,
        agent: issued.signIn.agent_id,
        signIn: issued.signIn.id,
        token: issued.signIn.token_id ?? undefined,
      });
    } else if (grantType === 'refresh_token') {
      const refresh = param(form, 'refresh_token', true);
      issued = await deps.signIns.refresh(refresh, (row) => checkClient(row, clientId, resource));
      deps.log.info('oauth sign-in: tokens refreshed', { account: issued.signIn.account_id, signIn: issued.signIn.id });
    } else {
      throw new TokenError('unsupported_grant_type', 'grant_type must be authorization_code or refresh_token');
    }
    sendJson(res, 200, tokenResponse(issued), headers);
    return 'issued';
  } catch (err) {
    if (err instanceof GrantRefused) {
      sendJson(res, 400, { error: 'invalid_grant', error_description: err.message }, headers);
      return `invalid_grant_${err.reason}`;
    }
    if (err instanceof TokenError) {
      sendJson(res, err.status, { error: err.error, error_description: err.description }, headers);
      return err.error;
    }
    throw err;
  }
}
