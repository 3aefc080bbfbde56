export { LockBusyError, SingleFlight } from './single-flight.js';
export type { SingleFlightOptions } from './single-flight.js';
export { CallLimiter } from './call-limiter.js';
export type { Admission, CallLimits, CallLimiterOptions } from './call-limiter.js';
export { ApprovalStatuses, ApprovalStore, ARGUMENTS_SHOWN_MAX_BYTES, canonicalArgumentsJson, DEFAULT_APPROVAL_TTL_MS } from './approval-store.js';
export type { ApprovalBinding, ApprovalRecord, ApprovalStatus, ConsumeOutcome, ConsumeReason, DecideOutcome } from './approval-store.js';
