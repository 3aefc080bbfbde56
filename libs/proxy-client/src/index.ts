export { ProxyClient, DEFAULT_CALL_TIMEOUT_MS, DEFAULT_LIVENESS, inputRequiredOf } from './proxy-client.js';
export type { ApprovalWait, CallInput, CallOutcome, InputRequired, InputWait, LivenessOptions } from './proxy-client.js';
export { connectRuntime, runtimeInboxPrefix } from './runtime-connection.js';
export type { RuntimeConnection, RuntimeConnectionOptions, RuntimeCredentials } from './runtime-connection.js';
export { TaskClient } from './tasks.js';
