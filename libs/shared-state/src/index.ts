export { LockBusyError, SingleFlight } from './single-flight.js';
export type { SingleFlightOptions } from './single-flight.js';
export { CallLimiter } from './call-limiter.js';
export type { Admission, CallLimits, CallLimiterOptions } from './call-limiter.js';
export {
  ApprovalStatuses,
  ApprovalStore,
  ARGUMENTS_SHOWN_MAX_BYTES,
  canonicalArgumentsJson,
  DEFAULT_APPROVAL_TTL_MS,
  PendingApprovalsFullError,
} from './approval-store.js';
export type { PendingCaps, PendingScope, PendingUnit } from './pending-caps.js';
export type {
  ApprovalBinding,
  ApprovalRecord,
  ApprovalStatus,
  ClaimOutcome,
  ConsumeOutcome,
  ConsumeReason,
  DecideOutcome,
} from './approval-store.js';
export { RateLimiter } from './rate-limiter.js';
export type { RateDecision, RateLimit, RateLimiterOptions, WhenRedisFails } from './rate-limiter.js';
export { LeaseQuota } from './quotas.js';
export type { LeaseQuotaOptions, QuotaDecision, QuotaLease } from './quotas.js';
export { DEFAULT_INPUT_TTL_MS, InputStore, newInputRequestId, PendingInputsFullError } from './input-store.js';
export type {
  AnswerExpectation,
  AnswerOutcome,
  AnswerReason,
  AnswerSealer,
  InputBinding,
  InputConsumeOutcome,
  InputConsumeReason,
  InputCreate,
  InputRecord,
  InputRecordStatus,
} from './input-store.js';
export { RUN_AGENTS_TTL_MS, RunAgents } from './run-agents.js';
export {
  FailFastRedis,
  RedisUnavailableError,
  connectLimitsRedis,
  isRedisUnavailable,
  replyCode,
  REDIS_FAIL_FAST,
  REDIS_RETRY_AFTER_MS,
} from './redis-options.js';
export { redisMemoryProblems, redisMemorySettings } from './redis-memory.js';
export type { RedisMemorySettings } from './redis-memory.js';
