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
  UnauthorizedError,
  type OAuthClientInformationMixed,
  type OAuthClientMetadata,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
  type OAuthResult,
  type OAuthTokens,
} from './oauth.js';
