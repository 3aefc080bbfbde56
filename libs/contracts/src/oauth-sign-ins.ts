import { createHash, randomBytes } from 'node:crypto';

/**
 * The agent endpoint's OAuth sign-in as the registry (the owner's `ListSignInRequests` and
 * `DecideSignIn`) and the authorization server (`@mcpx/authorization-server`, its own process)
 * share it: its public paths, the sign-in ids, how its secrets are stored. Public contract: the
 * paths never change.
 */
export const AS_BASE_PATH = '/v1/oauth-server';
/** `GET`: the authorization request (RFC 6749 §4.1.1, PKCE S256, RFC 8707 `resource`, a client ID metadata document URL as client id). */
export const AUTHORIZE_PATH = `${AS_BASE_PATH}/authorize`;
/** `POST` (form): `authorization_code` and `refresh_token` grants. */
export const TOKEN_PATH = `${AS_BASE_PATH}/token`;
/** `POST` (form): RFC 7009 revocation by the client (signing out). */
export const REVOKE_PATH = `${AS_BASE_PATH}/revoke`;
/** `GET ?id=…&nonce=…`: the approver's browser, back from the console, goes on to the client's redirect URI. */
export const CONTINUE_PATH = `${AS_BASE_PATH}/continue`;
/** RFC 8414 metadata (for an issuer without a path; one with a path adds it after this). */
export const AS_METADATA_PATH = '/.well-known/oauth-authorization-server';
/** Where the console shows a pending sign-in: `<console's public url>/console/#sign-in=<id>`. */
export const CONSOLE_PATH = '/console/';
export const CONSOLE_SIGN_IN_FRAGMENT = 'sign-in=';

/** A sign-in's id: `si_` and 32 hex digits. */
export const SIGN_IN_ID_RE = /^si_[0-9a-f]{32}$/;

/** Pending sign-ins one account holds at once: the authorize endpoint is open to anyone. */
export const MAX_PENDING_SIGN_INS = 20;

/** SHA-256 (hex) of a sign-in secret (cookie, nonce, code, refresh token): the only form stored. */
export function signInSecretHash(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

/** A sign-in secret: 32 random bytes, base64url (43 characters). */
export function randomSignInSecret(): string {
  return randomBytes(32).toString('base64url');
}
