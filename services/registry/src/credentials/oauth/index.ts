/**
 * The registry's OAuth client pieces that run without the service around them (the conformance
 * harness drives them with an in-memory store): the SDK providers over the sealed store's shape,
 * and how `config.oauth` becomes that state.
 */
export { RegistryOAuthProvider } from './oauth-provider.js';
export type { OAuthStateStore, RegistryOAuthProviderOptions } from './oauth-provider.js';
export type { OAuthClientState } from './oauth-connections.repository.js';
export {
  ClientCredentialsError,
  ClientCredentialsOAuthProvider,
  requestClientCredentialsToken,
} from './client-credentials-provider.js';
export type { ClientCredentialsTarget } from './client-credentials-provider.js';
export { preRegisteredState, validatePreRegisteredClient } from './oauth-client-config.js';
export type { PreRegisteredClient } from './oauth-client-config.js';
export { readAuthorizationResponse } from './authorization-response.js';
export type { AuthorizationResponse } from './authorization-response.js';
