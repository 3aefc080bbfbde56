export {
  AuthMethods,
  CLIENT_ASSERTION_ALGS,
  OAuthGrants,
  ServerConfigColumn,
  decodeServerConfig,
  headerSecretName,
  isOwnSecretRef,
  openOAuthTokens,
  openVendorTokens,
  sealOAuthTokens,
  sealVendorTokens,
} from './stored.js';
export type {
  AuthMethod,
  ClientAssertionAlg,
  OAuthGrant,
  SealedTokenColumns,
  StoredOAuthClient,
  StoredOAuthTokens,
  StoredServerConfig,
  VendorTokens,
} from './stored.js';
export { endpointReads, proxyReads, readEraVerdict } from './read-model.js';
export type { EndpointReadModel, EndpointReads, ProxyReadModel, ProxyReads } from './read-model.js';
export { StoredShapeError, cborShape, jsonShape } from './reads/stored-shape.js';
export type { StoredShape } from './reads/stored-shape.js';
export {
  BuiltinToolsColumn,
  DiscoveredToolsColumn,
  HeldChangesColumn,
  ServerToolsColumn,
  ToolChangeColumn,
  ToolContractColumn,
  readServerTools,
  readWithheldTool,
} from './reads/server-tools.js';
export type { ServerToolRows } from './reads/server-tools.js';
export { AgentDefinitionColumn, ToolMapColumn, readAgent, readAgentToolSet } from './reads/agents.js';
export type { AgentRows, AgentToolSetRows } from './reads/agents.js';
export {
  HeldToolsColumn,
  ToolDocumentColumn,
  readHeldTool,
  readToolDocument,
  readToolDocuments,
} from './reads/tool-documents.js';
export { CredentialReader, REFRESH_BEFORE_EXPIRY_MS, expiring } from './server-credentials.js';
export type { CredentialTarget, RenewalKind, ServerCredentials } from './server-credentials.js';
