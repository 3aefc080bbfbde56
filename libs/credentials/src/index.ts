export {
  AuthMethods,
  CLIENT_ASSERTION_ALGS,
  OAuthGrants,
  decodeServerConfig,
  headerSecretName,
  isOwnSecretRef,
  openOAuthTokens,
  openVendorTokens,
  sealOAuthTokens,
  sealVendorTokens,
} from './stored.js';
export type { AuthMethod, ClientAssertionAlg, OAuthGrant, SealedTokenColumns, StoredOAuthClient, StoredOAuthTokens, StoredServerConfig, VendorTokens } from './stored.js';
export { proxyReads, readEraVerdict } from './read-model.js';
export type { ProxyReadModel, ProxyReads } from './read-model.js';
export { CredentialReader, REFRESH_BEFORE_EXPIRY_MS, expiring } from './server-credentials.js';
export type { CredentialTarget, RenewalKind, ServerCredentials } from './server-credentials.js';
