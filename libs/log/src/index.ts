export { createLogger } from './logger.js';
export type { Logger, LogLevel, LogSink } from './logger.js';
