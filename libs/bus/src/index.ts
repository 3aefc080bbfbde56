export { DEFAULT_INBOX_PREFIX, connectBus, ensureStreams } from './bus.js';
export type { Bus, BusCredentials, BusLog, BusOptions, Reply } from './bus.js';
