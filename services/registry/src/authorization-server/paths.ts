/**
 * The registry's OAuth 2.1 authorization server for sign-ins to the agent MCP endpoint (not the
 * registry's own OAuth client side, under `/v1/oauth`). Public contract: these paths never change.
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
/** Where the console shows a pending sign-in: `<public url>/console/#sign-in=<id>`. */
export const CONSOLE_PATH = '/console/';
export const CONSOLE_SIGN_IN_FRAGMENT = 'sign-in=';
