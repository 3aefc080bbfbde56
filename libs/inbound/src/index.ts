export { BodyBudget } from './budget.js';
export { capConnections, plainAddress } from './connection-cap.js';
export { InboundGuard, hasBody } from './inbound-guard.js';
export type { InboundGuardOptions } from './inbound-guard.js';
export { RefusalLog } from './refusal-log.js';
export type { WarnLogger } from './refusal-log.js';
export { BUDGET_RETRY_AFTER_SECONDS, InboundReason, refusalMessage } from './refusals.js';
export type { InboundRefusal } from './refusals.js';
