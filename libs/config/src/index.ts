export { loadConfig, parseKeyring, parseNatsCredentials, DEFAULT_PROXY_SETTINGS } from './config.js';
export type { Config, OutboundPolicy, KeyringEntry, NatsCredentials, ProxySettings, VendorClient } from './config.js';
export { NatsRoles, RESPONSE_WINDOW_MS, inboxPrefixOf, natsPermissions, renderNatsServerConfig } from './nats-permissions.js';
export type { NatsPermissions, NatsRole, NatsServerConfigInput, NatsUser } from './nats-permissions.js';
