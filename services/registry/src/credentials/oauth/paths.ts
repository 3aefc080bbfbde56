/** `GET /v1/oauth/callback`: where the authorization server sends the owner's browser back. */
export const OAUTH_CALLBACK_PATH = '/v1/oauth/callback';

/**
 * `GET /v1/oauth/client-metadata.json`: the registry's OAuth client ID metadata document (MCP
 * authorization 2025-11-25, "client ID metadata documents"). Its URL is the registry's client id
 * at every authorization server that advertises `client_id_metadata_document_supported`, so the
 * path is part of a public contract: it never changes.
 */
export const OAUTH_CLIENT_METADATA_PATH = '/v1/oauth/client-metadata.json';

/**
 * `GET /v1/oauth/start?ticket=…`: opens a single-use ticket of a signed authorization start, sets
 * the browser's binding cookie and redirects to the authorization server.
 */
export const OAUTH_START_PATH = '/v1/oauth/start';

/** The path the binding cookie is sent to: the start and the callback, nothing else of the API. */
export const OAUTH_COOKIE_PATH = '/v1/oauth';
