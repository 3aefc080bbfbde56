export { AddressKind, classifyAddress } from './address.js';
export type { OutboundPolicy } from './policy.js';
export { checkAddress, isAllowedAddress, isAllowedHttpHost } from './policy.js';
export {
  OUTBOUND_REFUSED,
  OutboundError,
  OutboundErrorCode,
  OutboundRefusal,
  OutboundRefusedError,
  ResponseBound,
  findOutboundError,
} from './errors.js';
export type { OutboundErrorDetails } from './errors.js';
export type {
  OutboundFetch,
  OutboundFetchOptions,
  OutboundLookup,
  OutboundRequest,
  OutboundRequestOptions,
  OutboundResponse,
  ResolvedAddress,
} from './outbound-fetch.js';
export { MAX_REDIRECTS, createOutboundFetch } from './outbound-fetch.js';
export type { ResponseBounds } from './response-bounds.js';
export { DEFAULT_RESPONSE_BOUNDS } from './response-bounds.js';
export type { BudgetedFetch, BudgetedFetchOptions } from './budgeted-fetch.js';
export { budgetedFetch } from './budgeted-fetch.js';
export { ByteBudget } from './byte-meter.js';
export { CUTOFF_JSONRPC_CODE } from './sse-cutoff.js';
