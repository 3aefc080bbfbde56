export { loadConfig, parseKeyring, parseNatsCredentials, DEFAULT_PROXY_SETTINGS } from './config.js';
export type { Config, OutboundPolicy, KeyringEntry, NatsCredentials, ProxySettings, VendorClient } from './config.js';
export { DEFAULT_AUDIT_RETENTION_DAYS, parsePinAudit } from './pins-audit.js';
export type { PinAuditSettings } from './pins-audit.js';
export { NatsRoles, RESPONSE_WINDOW_MS, inboxPrefixOf, natsPermissions, natsUserEntries, renderNatsServerConfig } from './nats-permissions.js';
export type { NatsPermissions, NatsRole, NatsServerConfigInput, NatsUser, NatsUserEntry } from './nats-permissions.js';
export { NATS_PASSWORD_ENV, deployNatsUsers, renderComposeNatsConfig, renderHelmNatsAuthValues } from './nats-deploy-config.js';
