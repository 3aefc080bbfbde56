export { SingleFlight } from './single-flight.js';
export type { SingleFlightOptions } from './single-flight.js';
export { CallLimiter } from './call-limiter.js';
export type { Admission, CallLimits, CallLimiterOptions } from './call-limiter.js';
