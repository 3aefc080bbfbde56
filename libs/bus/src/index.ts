export { connectBus, ensureStreams } from './bus.js';
export type { Bus, BusCredentials, BusLog, BusOptions, Reply } from './bus.js';
