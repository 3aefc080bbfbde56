export { ProxyClient, DEFAULT_CALL_TIMEOUT_MS } from './proxy-client.js';
export { DEFAULT_LIVENESS, inputRequiredOf } from './call-types.js';
export type { ApprovalWait, CallInput, CallOutcome, InputRequired, InputWait, LivenessOptions } from './call-types.js';
export { connectRuntime, runtimeInboxPrefix } from './runtime-connection.js';
export type { RuntimeConnection, RuntimeConnectionOptions, RuntimeCredentials } from './runtime-connection.js';
export { TaskClient, type TaskWait } from './tasks.js';
export { RequestMux, type MuxRequestOptions } from './request-mux.js';
