export { SingleFlight } from './single-flight.js';
export type { SingleFlightOptions } from './single-flight.js';
