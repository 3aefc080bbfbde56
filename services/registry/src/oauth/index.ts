/**
 * The registry's OAuth client pieces that run without the service around them (the conformance
 * harness drives them with an in-memory store): the SDK provider over the sealed store's shape.
 */
export { RegistryOAuthProvider } from './oauth-provider.js';
export type { OAuthStateStore, RegistryOAuthProviderOptions } from './oauth-provider.js';
export type { OAuthClientState } from './oauth-connections.repository.js';
