export { loadConfig, parseKeyring } from './config.js';
export type { Config, OutboundPolicy, KeyringEntry } from './config.js';
