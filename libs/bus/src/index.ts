export { DEFAULT_INBOX_PREFIX, STARTUP_WAIT_MS, connectBus, ensureStreams, isTransientStartupError, retryStartup } from './bus.js';
export type { Bus, BusCredentials, BusLog, BusOptions, Reply } from './bus.js';
