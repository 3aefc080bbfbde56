export {
  connectMcp,
  type CallToolOptions,
  type ConnectMcpOptions,
  type ListToolsOptions,
  type McpConnection,
  type McpTransportKind,
} from './connect.js';
export {
  classifyMcpError,
  McpClientError,
  McpClientErrorCode,
  redactUrl,
  type ClassifyContext,
  type McpClientErrorDetails,
} from './errors.js';
export {
  resourceMetadataUrl,
  runOAuth,
  boundedOAuthFetch,
  createPrivateKeyJwtAuth,
  describeOAuthError,
  OAUTH_DOCUMENT_MAX_BYTES,
  OAuthDocumentError,
  UnauthorizedError,
  type AddClientAuthentication,
  type OAuthClientInformationMixed,
  type OAuthClientMetadata,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
  type OAuthResult,
  type OAuthTokens,
} from './oauth.js';
