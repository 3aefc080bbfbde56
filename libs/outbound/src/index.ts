export { AddressKind, classifyAddress } from './address.js';
export type { OutboundPolicy } from './policy.js';
export { checkAddress, isAllowedAddress, isAllowedHttpHost } from './policy.js';
export { OUTBOUND_REFUSED, OutboundRefusal, OutboundRefusedError } from './errors.js';
export type { OutboundFetch, OutboundFetchOptions, OutboundLookup, OutboundRequest, OutboundRequestOptions, OutboundResponse, ResolvedAddress } from './outbound-fetch.js';
export { MAX_REDIRECTS, createOutboundFetch } from './outbound-fetch.js';
