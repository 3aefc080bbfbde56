export { connectBus, ensureStreams } from './bus.js';
export type { Bus, BusLog, BusOptions, Reply } from './bus.js';
