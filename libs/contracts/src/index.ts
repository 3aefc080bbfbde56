export { makeSubjects, subjectToken, QueueGroups } from './subjects.js';
export {
  CALL_LOGGER_MAX_CHARS,
  CALL_LOG_DATA_MAX_BYTES,
  LOG_LEVELS,
  decodeCallLog,
  decodeClientLogLevel,
  isLogLevel,
  logLevelPasses,
} from './call-log.js';
export type { CallLog, ClientLogLevel, LogLevel } from './call-log.js';
export type { Subjects } from './subjects.js';
export { encodePayload, decodePayload } from './codec.js';
export { decodeStrict } from './codec.js';
export { BODY_LIMITS, PAYLOAD_LIMITS, StrictRules, scanStrictCbor } from './strict-cbor.js';
export type { StrictLimits, StrictRule } from './strict-cbor.js';
export { boundInField, checkValueBounds } from './value-bounds.js';
export { guardCallback, malformedMessageFields } from './guard-callback.js';
export type { CallbackLog } from './guard-callback.js';
export {
  decodeAgentChangedEvent,
  decodeAgentToolsChangedEvent,
  decodeApprovalDecidedEvent,
  decodeApprovalRequestedEvent,
  decodeInputAnsweredEvent,
  decodeInputRequestedEvent,
  decodeOAuthRefreshRequest,
  decodeCallProgress,
  decodeProxyCancel,
  decodeReply,
  decodeRequest,
  decodeRunEnded,
  decodeServerDeletedEvent,
  decodeServerDiscoveredEvent,
  decodeToolReviewRequestedEvent,
  decodeToolsObserved,
  heldToolStatus,
  oauthRefreshAnswerValue,
} from './payload-decoders.js';
export {
  MAX_PROMPT_ARGUMENT_BYTES,
  MAX_PROMPT_ARGUMENTS,
  MAX_RELAY_REQUEST_BYTES,
  MAX_RELAY_TIMEOUT_MS,
  MAX_URI_LENGTH,
  INPUT_METHODS,
  RELAY_METHODS,
  RELAY_REQUEST_LIMITS,
  decodeRelayReply,
  decodeRelayRequest,
  encodeRelayRequest,
  parseRelayRequest,
  relayParams,
  resourceUriFault,
  type RelayMethod,
  type RelayReply,
  type RelayRequest,
} from './relay.js';
export {
  NoticeKinds,
  WATCH_LEASE_MS,
  WatchKinds,
  decodeUpstreamNotice,
  decodeWatchReply,
  decodeWatchRequest,
  encodeWatchRequest,
  parseUpstreamNotice,
  parseWatchRequest,
  type NoticeKind,
  type UpstreamNotice,
  type WatchKind,
  type WatchReply,
  type WatchRequest,
} from './watches.js';
export {
  CALL_REQUEST_LIMITS,
  ENDPOINT_RUN_PREFIX,
  MAX_CALL_TIMEOUT_MS,
  MAX_REQUEST_BYTES,
  decodeCallRequest,
  encodeCallRequest,
  parseCallRequest,
  proxyResultValue,
} from './proxy-call.js';
export {
  TOKEN_DECIDER_PREFIX,
  decodeClientDeclared,
  decodeForwardedAnswer,
  decodeTokenDecisionAudit,
  forwardedAnswerReplyValue,
  isTokenDecider,
  tokenDecider,
  tokenDecisionAuditReplyValue,
} from './endpoint-messages.js';
export type {
  ClientDeclared,
  ForwardedAnswer,
  ForwardedAnswerReply,
  TokenDecisionAudit,
  TokenDecisionAuditReply,
} from './endpoint-messages.js';
export {
  agentToolsReplyValue,
  decodeAgentToolsRequest,
  decodeDeleteLambdaToolRequest,
  decodeSetLambdaToolRequest,
  lambdaToolReplyValue,
  toolSearchReplyValue,
} from './reply-decoders.js';
export { FieldRules, payloadDecoder } from './field-rules.js';
export type { JsonSchema, Rule, Shaped, Table } from './field-rules.js';
export { ERROR_TRAITS, ErrorCodes, WireError, invalidInput, toWireError } from './errors.js';
export { lambdaToolDocument } from './lambda-documents.js';
export type { ErrorCode, ErrorDetails, ErrorDetailsMap, ErrorTraits, WireErrorShape } from './errors.js';
export { PROGRESS_MESSAGE_MAX_CHARS, Transports, ServerStates, approvalDecidedEvent } from './payloads.js';
export type {
  Transport,
  ServerState,
  ServerStatus,
  HeldToolStatus,
  ServerDiscoveredEvent,
  ServerDeletedEvent,
  AgentChangedEvent,
  AgentToolsChangedEvent,
  ProxyCallRequest,
  ProxyCallReply,
  Reply,
  ProxyCancel,
  CallProgress,
  RunEnded,
  ToolsObserved,
  AgentToolsRequest,
  AgentToolsReply,
  ProviderToolSet,
  SetLambdaToolRequest,
  DeleteLambdaToolRequest,
  LambdaToolReply,
  ApprovalRequestedEvent,
  ApprovalDecidedEvent,
  WaitingCallNotice,
  DecidedApproval,
} from './payloads.js';
export {
  FAMILY_RE,
  SEARCH_LIMIT_DEFAULT,
  SEARCH_LIMIT_MAX,
  SEARCH_QUERY_MAX_LENGTH,
  checkSearchInput,
  familyOf,
  familyServer,
} from './search.js';
export type { SearchInput, ToolSearchFamily, ToolSearchHit, ToolSearchReply, ToolSearchRequest } from './search.js';
export { accessTokenHash } from './oauth-refresh.js';
export { AGENT_TOKENS_CHANNEL, AGENT_TOKEN_PREFIX, agentTokenHash, isAgentTokenShape } from './agent-tokens.js';
export type { AgentTokenView } from './agent-tokens.js';
export { authContextOf } from './auth-context.js';
export type { OAuthRefreshAnswer, OAuthRefreshReply, OAuthRefreshRequest } from './oauth-refresh.js';
export { INPUT_LIMITS, INPUT_REQUEST_ID_RE, InputStatuses } from './inputs.js';
export { checkElicitAnswer, checkElicitContent, checkRequestedSchema } from './input-checks.js';
export type {
  ElicitAnswer,
  ElicitValue,
  InputAnswerer,
  InputAnsweredEvent,
  InputRequestItem,
  InputRequestedEvent,
  InputStatus,
  RestrictedProperty,
  RestrictedSchema,
} from './inputs.js';
export { ActionTypes } from './api.js';
export type { McpServerConfigInput, AgentDefinition, AgentView, ActionEnvelope, ActionType } from './api.js';
export { ACTION_MAP, ACTION_TYPES, type ActionSpec } from './action-map.js';
export { ACTION_COMPONENTS, type ActionRole } from './action-components.js';
export type {
  ApprovalView,
  AuditEventView,
  CallFigures,
  CallView,
  InputRequestView,
  RedactedMcpServer,
  RedactedOAuthClient,
  RedactedTool,
  ServerCallFigures,
  ToolChangeView,
} from './action-views.js';
export type {
  ActionOf,
  ActionRequest,
  ActionRequests,
  ActionResponse,
  ActionResponses,
  DiscoveredServerAnswer,
  DroppedSecrets,
  SignInRequestView,
} from './action-types.js';
export { openApiDocument } from './openapi.js';
export { REVIEW_CHANGES_MAX } from './reviews.js';
export type { ToolReviewRequestedEvent } from './reviews.js';
export { NatsFailures, natsFailure } from './nats-failures.js';
export type { NatsFailure } from './nats-failures.js';
export { CALL_OUTCOMES, CALL_OUTCOME_FILTERS, CALL_PAGE } from './activity.js';
export type { CallOutcome, CallOutcomeFilter } from './activity.js';
export {
  TASK_ID_RE,
  TASK_LIST_MAX,
  TaskStates,
  decodeTaskEvent,
  decodeTaskReply,
  decodeTaskRequest,
  encodeTaskRequest,
  isFinalTaskState,
  taskQuestionsValue,
  taskViewValue,
  type TaskAnswered,
  type TaskEvent,
  type TaskQuestionsView,
  type TaskReply,
  type TaskRequest,
  type TaskState,
  type TaskView,
} from './tasks.js';
export {
  AS_BASE_PATH,
  AS_METADATA_PATH,
  AUTHORIZE_PATH,
  CONSOLE_PATH,
  CONSOLE_SIGN_IN_FRAGMENT,
  CONTINUE_PATH,
  MAX_PENDING_SIGN_INS,
  REVOKE_PATH,
  SIGN_IN_ID_RE,
  TOKEN_PATH,
  randomSignInSecret,
  signInSecretHash,
} from './oauth-sign-ins.js';
