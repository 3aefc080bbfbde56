export { ProxyClient, DEFAULT_CALL_TIMEOUT_MS, DEFAULT_LIVENESS } from './proxy-client.js';
export type { ApprovalWait, CallInput, CallOutcome, LivenessOptions } from './proxy-client.js';
