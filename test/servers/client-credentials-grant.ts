import { constants, createPublicKey, timingSafeEqual, verify, type KeyObject } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { OAuthTokens } from '@modelcontextprotocol/client';

/** How a client of the client credentials grant authenticates at the token endpoint. */
export type ClientAuthMethod = 'client_secret_basic' | 'client_secret_post' | 'private_key_jwt';

/** What the authorization server knows of a machine client: its secret, or its public key and algorithm. */
export type MachineClient = { secret: string } | { publicKey: KeyObject | string; alg: string };

/** Algorithms the server verifies assertions with (RFC 7518 §3.1). */
export const ASSERTION_ALGS = ['ES256', 'ES384', 'ES512', 'RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'];

const JWT_BEARER = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
const MAX_FORM_BYTES = 64 * 1024;

export interface ClientCredentialsStats {
  /** Tokens issued by the client credentials grant. */
  clientCredentialsGrants: number;
  /** The client authentication method of each of those. */
  clientAuthMethods: ClientAuthMethod[];
  /** Why a client credentials request was refused, each time one was. */
  clientCredentialsRefusals: string[];
}

export interface ClientCredentialsGrantOptions {
  /** The issuer, with its trailing slash. */
  issuer: string;
  /** The client authentication methods taken (others are refused). */
  authMethods: ClientAuthMethod[];
  stats: ClientCredentialsStats;
  /** Issues an access token (no refresh token: RFC 6749 §4.4.3). */
  issue(clientId: string, resource: string | undefined): OAuthTokens;
}

type Answer = { status: number; body: Record<string, unknown> };

/**
 * The client credentials grant (RFC 6749 §4.4) of the test authorization server, which the SDK's
 * token handler does not implement: `client_secret_basic`, `client_secret_post` and RFC 7523
 * `private_key_jwt`, whose assertion is verified for real (signature with node:crypto, `iss` =
 * `sub` = the client id, `aud` the token endpoint or the issuer, `exp` in the future, `nbf` if any
 * in the past, a `jti` used once).
 */
export class ClientCredentialsGrant {
  readonly clients = new Map<string, MachineClient>();
  /** `client id, jti` → the assertion's expiry (ms): a jti is refused while its assertion could be replayed. */
  private readonly usedJtis = new Map<string, number>();

  constructor(private readonly opts: ClientCredentialsGrantOptions) {}

  get tokenEndpoint(): string {
    return new URL('/token', this.opts.issuer).href;
  }

  /**
   * Express middleware for `POST /token`, installed before the SDK's router: it reads the form,
   * answers a `client_credentials` request, and leaves any other grant (form parsed) to the SDK.
   */
  middleware(): (req: IncomingMessage & { body?: unknown }, res: ServerResponse, next: () => void) => void {
    return (req, res, next) => {
      if (!/^application\/x-www-form-urlencoded\b/i.test(req.headers['content-type'] ?? '')) return next();
      readForm(req).then(
        (form) => {
          req.body = Object.fromEntries(form);
          if (form.get('grant_type') !== 'client_credentials') return next();
          const answer = this.answer(form, req.headers.authorization);
          res
            .writeHead(answer.status, { 'content-type': 'application/json', 'cache-control': 'no-store' })
            .end(JSON.stringify(answer.body));
        },
        () =>
          void res
            .writeHead(400, { 'content-type': 'application/json' })
            .end(JSON.stringify({ error: 'invalid_request', error_description: 'unreadable form' })),
      );
    };
  }

  private answer(form: URLSearchParams, authorization: string | undefined): Answer {
    const auth = this.authenticate(form, authorization);
    if ('reason' in auth) return this.refuse(auth.reason);
    if (!this.opts.authMethods.includes(auth.method)) return this.refuse(`${auth.method} is not taken here`);
    this.opts.stats.clientCredentialsGrants += 1;
    this.opts.stats.clientAuthMethods.push(auth.method);
    const scope = form.get('scope');
    return {
      status: 200,
      body: { ...this.opts.issue(auth.clientId, form.get('resource') ?? undefined), ...(scope ? { scope } : {}) },
    };
  }

  private refuse(reason: string): Answer {
    this.opts.stats.clientCredentialsRefusals.push(reason);
    return { status: 401, body: { error: 'invalid_client', error_description: reason } };
  }

  private authenticate(
    form: URLSearchParams,
    authorization: string | undefined,
  ): { clientId: string; method: ClientAuthMethod } | { reason: string } {
    const basic = /^Basic\s+(\S+)$/i.exec(authorization ?? '')?.[1];
    const methods = [
      basic !== undefined,
      form.has('client_assertion') || form.has('client_assertion_type'),
      form.has('client_secret'),
    ].filter(Boolean).length;
    if (methods > 1) return { reason: 'more than one client authentication method' };
    if (basic !== undefined) {
      const decoded = Buffer.from(basic, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      if (colon < 0) return { reason: 'malformed Basic credentials' };
      return this.checkSecret(
        formDecode(decoded.slice(0, colon)),
        formDecode(decoded.slice(colon + 1)),
        'client_secret_basic',
      );
    }
    if (form.has('client_assertion_type')) {
      if (form.get('client_assertion_type') !== JWT_BEARER) return { reason: 'unknown client_assertion_type' };
      return this.checkAssertion(form.get('client_assertion') ?? '', form.get('client_id'));
    }
    const id = form.get('client_id');
    if (form.has('client_secret') && id !== null)
      return this.checkSecret(id, form.get('client_secret') ?? '', 'client_secret_post');
    return { reason: 'no client authentication' };
  }

  private checkSecret(
    clientId: string,
    secret: string,
    method: ClientAuthMethod,
  ): { clientId: string; method: ClientAuthMethod } | { reason: string } {
    const client = this.clients.get(clientId);
    if (client === undefined || !('secret' in client)) return { reason: 'unknown client or no secret registered' };
    const a = Buffer.from(secret);
    const b = Buffer.from(client.secret);
    if (a.length !== b.length || !timingSafeEqual(a, b)) return { reason: 'wrong client secret' };
    return { clientId, method };
  }

  private checkAssertion(
    assertion: string,
    formClientId: string | null,
  ): { clientId: string; method: ClientAuthMethod } | { reason: string } {
    const parts = assertion.split('.');
    if (parts.length !== 3) return { reason: 'the assertion is not a signed JWT' };
    let header: { alg?: unknown };
    let claims: { iss?: unknown; sub?: unknown; aud?: unknown; exp?: unknown; nbf?: unknown; jti?: unknown };
    try {
      header = JSON.parse(Buffer.from(parts[0]!, 'base64url').toString('utf8')) as typeof header;
      claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as typeof claims;
    } catch {
      return { reason: 'the assertion is not a JWT' };
    }
    if (typeof claims.iss !== 'string' || claims.iss !== claims.sub)
      return { reason: 'iss and sub must both be the client id' };
    if (formClientId !== null && formClientId !== claims.iss)
      return { reason: 'client_id is not the assertion issuer' };
    const client = this.clients.get(claims.iss);
    if (client === undefined || !('publicKey' in client)) return { reason: 'unknown client or no key registered' };
    if (header.alg !== client.alg) return { reason: `the assertion is not signed with ${client.alg}` };
    const key = typeof client.publicKey === 'string' ? createPublicKey(client.publicKey) : client.publicKey;
    if (!verifySignature(client.alg, key, `${parts[0]}.${parts[1]}`, Buffer.from(parts[2]!, 'base64url')))
      return { reason: 'bad assertion signature' };
    const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
    const accepted = [this.tokenEndpoint, this.opts.issuer, this.opts.issuer.replace(/\/$/, '')];
    if (!audiences.some((a) => typeof a === 'string' && accepted.includes(a)))
      return { reason: 'aud is neither the token endpoint nor the issuer' };
    const now = Date.now();
    if (typeof claims.exp !== 'number' || claims.exp * 1000 <= now) return { reason: 'the assertion expired' };
    if (claims.nbf !== undefined && (typeof claims.nbf !== 'number' || claims.nbf * 1000 > now))
      return { reason: 'the assertion is not valid yet' };
    if (typeof claims.jti !== 'string' || claims.jti === '') return { reason: 'the assertion has no jti' };
    for (const [k, exp] of this.usedJtis) if (exp <= now) this.usedJtis.delete(k);
    const jtiKey = `${claims.iss}\n${claims.jti}`;
    if (this.usedJtis.has(jtiKey)) return { reason: 'the assertion jti was used before' };
    this.usedJtis.set(jtiKey, claims.exp * 1000);
    return { clientId: claims.iss, method: 'private_key_jwt' };
  }
}

function verifySignature(alg: string, key: KeyObject, data: string, signature: Buffer): boolean {
  if (!ASSERTION_ALGS.includes(alg)) return false;
  const hash = `sha${alg.slice(2)}`;
  const input = Buffer.from(data);
  try {
    if (alg.startsWith('ES')) return verify(hash, input, { key, dsaEncoding: 'ieee-p1363' }, signature);
    if (alg.startsWith('PS'))
      return verify(
        hash,
        input,
        { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_DIGEST },
        signature,
      );
    return verify(hash, input, key, signature);
  } catch {
    return false;
  }
}

/** RFC 6749 §2.3.1: Basic credentials are form-encoded first (clients that do not encode still decode). */
function formDecode(s: string): string {
  try {
    return decodeURIComponent(s.replace(/\+/g, '%20'));
  } catch {
    return s;
  }
}

function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_FORM_BYTES) req.destroy(new Error('form too large'));
      else chunks.push(c);
    });
    req.on('end', () => resolve(new URLSearchParams(Buffer.concat(chunks).toString('utf8'))));
    req.on('error', reject);
  });
}
