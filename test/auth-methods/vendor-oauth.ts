import { createHash, randomBytes } from 'node:crypto';
import type { TestOAuthServer } from '../servers/index.js';

/**
 * Standing in for "the workspace connected the vendor the normal way": the operator's OAuth client
 * registered at the (test) vendor's authorization server, and an account's authorization-code
 * grant with PKCE, all over HTTP. The tokens it returns are what SetVendorConnection takes.
 */
export interface VendorClient {
  clientId: string;
  clientSecret: string;
}

const REDIRECT_URI = 'http://127.0.0.1:9/vendor-callback';

/** Dynamic client registration (RFC 7591) of the operator's client; confidential (client_secret_post). */
export async function registerVendorClient(as: TestOAuthServer): Promise<VendorClient> {
  const res = await fetch(new URL('register', as.issuer), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'vendor-connector',
      redirect_uris: [REDIRECT_URI],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_post',
    }),
  });
  if (!res.ok) throw new Error(`registration failed: HTTP ${res.status}`);
  const body = (await res.json()) as { client_id: string; client_secret: string };
  return { clientId: body.client_id, clientSecret: body.client_secret };
}

/** `BUILTIN_TOKEN_ENDPOINTS` and `BUILTIN_VENDOR_CLIENTS` for `vendor` at `as`. */
export function vendorEnv(as: TestOAuthServer, client: VendorClient, vendor = 'github'): Record<string, string> {
  return {
    BUILTIN_TOKEN_ENDPOINTS: `${vendor}=${new URL('token', as.issuer).href}`,
    BUILTIN_VENDOR_CLIENTS: `${vendor}=${client.clientId}:${client.clientSecret}`,
  };
}

/** One authorization-code grant (auto-approved by the test server): SetVendorConnection's fields. */
export async function authorizeVendor(
  as: TestOAuthServer,
  client: VendorClient,
): Promise<{ accessToken: string; refreshToken: string; expiresAt: string }> {
  const verifier = randomBytes(32).toString('base64url');
  const authorize = new URL('authorize', as.issuer);
  authorize.search = new URLSearchParams({
    client_id: client.clientId,
    redirect_uri: REDIRECT_URI,
    response_type: 'code',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    state: randomBytes(8).toString('hex'),
  }).toString();
  const redirect = await fetch(authorize, { redirect: 'manual' });
  const code = new URL(redirect.headers.get('location') ?? 'http://x/').searchParams.get('code');
  if (code === null) throw new Error(`authorization failed: HTTP ${redirect.status}`);
  const res = await fetch(new URL('token', as.issuer), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      redirect_uri: REDIRECT_URI,
      client_id: client.clientId,
      client_secret: client.clientSecret,
    }),
  });
  if (!res.ok) throw new Error(`code exchange failed: HTTP ${res.status}`);
  const tokens = (await res.json()) as { access_token: string; refresh_token: string; expires_in: number };
  return {
    accessToken: tokens.access_token,
    refreshToken: tokens.refresh_token,
    expiresAt: new Date(Date.now() + tokens.expires_in * 1000).toISOString(),
  };
}
