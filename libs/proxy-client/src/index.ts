export { ProxyClient, DEFAULT_CALL_TIMEOUT_MS } from './proxy-client.js';
export type { ApprovalWait, CallInput, CallOutcome } from './proxy-client.js';
