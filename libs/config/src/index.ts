export { loadConfig, parseKeyring, DEFAULT_PROXY_SETTINGS } from './config.js';
export type { Config, OutboundPolicy, KeyringEntry, ProxySettings, VendorClient } from './config.js';
