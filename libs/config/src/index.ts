export {
  busConnection,
  loadConfig,
  parseKeyring,
  parseNatsCredentials,
  DEFAULT_PROXY_SETTINGS,
  DEFAULT_TASK_SETTINGS,
} from './config.js';
export type {
  AccountCreation,
  Config,
  OutboundPolicy,
  KeyringEntry,
  NatsCredentials,
  ProxySettings,
  TaskSettings,
  VendorClient,
} from './config.js';
export { DEFAULT_AUDIT_RETENTION_DAYS, parsePinAudit } from './pins-audit.js';
export type { PinAuditSettings } from './pins-audit.js';
export {
  NatsRoles,
  RESPONSE_WINDOW_MS,
  inboxPrefixOf,
  natsPermissions,
  natsUserEntries,
  renderNatsServerConfig,
} from './nats-permissions.js';
export type { NatsPermissions, NatsRole, NatsServerConfigInput, NatsUser, NatsUserEntry } from './nats-permissions.js';
export {
  NATS_PASSWORD_ENV,
  deployNatsUsers,
  renderComposeNatsConfig,
  renderHelmNatsAuthValues,
} from './nats-deploy-config.js';
export { LOCAL_DEV_KEYRING, parseProfile, refuseDevelopmentKeys } from './profile.js';
export type { Profile } from './profile.js';
export {
  integerSetting,
  nonNegativeNumberSetting,
  onOffSetting,
  portSetting,
  zeroMeansDefaultSetting,
} from './settings.js';
export type { IntegerSetting } from './settings.js';
export { loadRegistrySettings } from './registry-settings.js';
export type { RegistrySettings } from './registry-settings.js';
export { DEFAULT_INBOUND_LIMITS, inboundLimits } from './inbound.js';
export type { InboundLimits } from './inbound.js';
export { DEFAULT_QUOTAS, parseQuotas } from './quotas.js';
export type { QuotaSettings, RateSetting } from './quotas.js';
export { DEFAULT_ACTIVITY_SETTINGS, parseActivity } from './activity.js';
export type { ActivitySettings } from './activity.js';
export { DEFAULT_AUTHORIZATION_SERVER_PORT, loadAuthorizationServerSettings } from './authorization-server-settings.js';
export type { AuthorizationServerSettings } from './authorization-server-settings.js';
