export { CONNECTOR_CAPABILITIES } from './capabilities.js';
export { connectMcp, type ConnectMcpOptions, type ElicitationHandler, type SamplingHandler } from './connect.js';
export {
  inputRequestOf,
  isInputRequired,
  type CallToolOptions,
  type CurrentTools,
  type CurrentToolsOptions,
  type InputRequest,
  type InputRequiredCallResult,
  type ListToolsOptions,
  type McpCallResult,
  type McpConnection,
  type McpListenOptions,
  type McpTransportKind,
  type RelayedMethod,
  type RelayOptions,
  type ToolsWithHints,
} from './mcp-connection.js';
export type { McpHttpRequest, McpHttpRequestOptions, RawBody, RawResponse } from './http-request.js';
export {
  TASKS_EXTENSION_ID,
  TaskDialect,
  UpstreamTaskStatus,
  createdTaskOf,
  endTaskSession,
  isTerminalStatus,
  offersTasksExtension,
  taskRequest,
  upstreamTaskOf,
  withTaskSupport,
  type TaskRequestOptions,
  type TaskWireTarget,
  type UpstreamTask,
} from './tasks.js';
export { discoverFault, isEraVerdict, type EraVerdict } from './era-verdict.js';
export { invalidMcpHeaderTools, type InvalidMcpHeaderTool } from './mcp-param-headers.js';
export { explainConnectFailure, socketErrorCode, type ConfiguredAuth } from './connect-failure.js';
export { McpClientError, McpClientErrorCode, McpClientRan, redactUrl, type McpClientErrorDetails } from './errors.js';
export { classifyMcpError, type ClassifyContext } from './classify.js';
export { redactErrorChain, redactSecrets, requestSecrets, scrubberOf, SecretScrubber, REDACTED } from './scrub.js';
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
export type {
  CallToolResult,
  CreateMessageRequestParams,
  CreateMessageResult,
  ElicitRequestParams,
  ElicitResult,
  InputRequiredResult,
  Tool,
} from '@modelcontextprotocol/client';
export { ProtocolError } from '@modelcontextprotocol/client';
