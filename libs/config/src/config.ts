import { parseInternalHttp } from './internal-http.js';
import {
  integerSetting,
  nonNegativeNumberSetting,
  onOffSetting,
  portSetting,
  zeroMeansDefaultSetting,
} from './settings.js';
import { inboxPrefixOf } from './nats-permissions.js';
import { parseQuotas, type QuotaSettings } from './quotas.js';
import { parsePinAudit, type PinAuditSettings } from './pins-audit.js';
import { parseActivity, type ActivitySettings } from './activity.js';
import { LOCAL_DEV_KEYRING, parseProfile, refuseDevelopmentKeys } from './profile.js';

/**
 * Configuration, read once from the environment by each service's main.ts and passed down.
 * Nothing else in the code reads `process.env`.
 */

export interface KeyringEntry {
  id: string;
  key: Buffer;
}

export interface OutboundPolicy {
  /** `local` allows plain http and loopback/private addresses; `production` allows neither. */
  profile: 'local' | 'production';
  /** Hosts (name or address, optional `:port`) that may be reached over plain http. */
  allowHttpHosts: string[];
  /** Hosts or CIDR ranges that may be reached although private, loopback or link-local. */
  allowPrivate: string[];
}

export interface Config {
  databaseUrl: string;
  natsUrl: string;
  /**
   * This service's NATS user (`NATS_USER` and `NATS_PASSWORD`, both or neither); unset: an
   * anonymous connection (a NATS without auth, as in tests). See `nats-permissions.ts`.
   */
  natsCredentials?: NatsCredentials;
  redisUrl: string;
  /** Namespace of every NATS subject and stream (`NATS_PREFIX`, e.g. `t1.`); empty by default. */
  natsPrefix: string;
  /** Prefix of every Redis key. */
  redisPrefix: string;
  /** Postgres schema names are fixed; this is the port each service's HTTP server listens on. */
  httpPort: number;
  httpHost: string;
  /**
   * Where `/metrics`, `/stats` and `/healthz` are served for operators and scrapers, never on the
   * public port (`INTERNAL_HTTP_PORT`, `INTERNAL_HTTP_HOST`; see `internal-http.ts`).
   */
  internalHttpPort: number;
  internalHttpHost: string;
  otlpEndpoint: string | undefined;
  toolNameStyle: 'double_underscore' | 'prefixed';
  /** AES-256-GCM keys, oldest first; the last one encrypts. */
  keyring: KeyringEntry[];
  outbound: OutboundPolicy;
  /** A stable id of this process among its service's instances. */
  instanceId: string;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
  /** The proxy's per-server protection and pool settings (read by the proxy only). */
  proxy: ProxySettings;
  /**
   * An approval of an `always_ask` call waits this long for a decision, and once approved the call
   * may be re-sent (once) for this long from the decision (`APPROVAL_TTL_MS`, default 10 min).
   */
  approvalTtlMs: number;
  /**
   * The registry's transactions held open across another store's answer at once (an audit entry
   * written before Redis, the projector or the task service holds its change): each holds one of
   * the pool's 10 connections (`REGISTRY_HELD_ENTRIES`, default 4).
   */
  heldEntries: number;
  /** Built-in server endpoints the operator overrides, slug → URL (`BUILTIN_ENDPOINTS=slug=url,…`; tests). */
  builtinEndpoints: Record<string, string>;
  /** Vendor token endpoints the operator overrides, vendor → URL (`BUILTIN_TOKEN_ENDPOINTS=vendor=url,…`; tests). */
  builtinTokenEndpoints: Record<string, string>;
  /**
   * The OAuth client the operator registered with each vendor, used to refresh vendor connections'
   * tokens (`BUILTIN_VENDOR_CLIENTS=vendor=clientId[:clientSecret],…`; read by the registry only).
   */
  builtinVendorClients: Record<string, VendorClient>;
  /** Quotas and rate limits per account, agent, signer, address and instance (`QUOTA_*`, `RATE_*`; see `quotas.ts`). */
  quotas: QuotaSettings;
  /**
   * How accounts come to exist (`ACCOUNTS`, read by the registry): `open` (the default), any key
   * is an account, created by its first action that writes; `closed`, only accounts an operator
   * created (`npm run accounts -- create <principal>`) are served, and an envelope of any other
   * account is refused (`forbidden`, naming `account`) before anything is written or kept.
   */
  accounts: AccountCreation;
  /**
   * The proxies in front of the registry whose `X-Forwarded-For` is believed for the per-address
   * rate limit (`TRUSTED_PROXIES`: addresses and CIDRs, comma separated; none by default: the
   * socket's peer is the client). Checked by the registry at its start.
   */
  trustedProxies: string[];
  /** Contract pinning and the audit log's retention (`PIN_DEFAULT`, `PIN_WRITERS_MAY_REVIEW`, `AUDIT_RETENTION_DAYS`; see `pins-audit.ts`). */
  pinAudit: PinAuditSettings;
  /** The call log: recording, retention and the proxy's buffer (`ACTIVITY*`; see `activity.ts`). */
  activity: ActivitySettings;
}

/**
 * A NATS user's connection settings: the `user`/`pass` pair and the `inboxPrefix` its permissions
 * allow it to receive replies on (`_INBOX_<user>`). Shaped as nats.js connection options, so it
 * can be spread into `connect()`.
 */
export interface NatsCredentials {
  user: string;
  pass: string;
  inboxPrefix: string;
}

/**
 * Reads `NATS_USER` / `NATS_PASSWORD` (or the names given, e.g. the CLI's `MCPX_NATS_USER`): both
 * or neither. Throws naming the variable, never the password.
 */
export function parseNatsCredentials(
  env: NodeJS.ProcessEnv,
  userVar = 'NATS_USER',
  passVar = 'NATS_PASSWORD',
): NatsCredentials | undefined {
  const user = env[userVar] ?? '';
  const pass = env[passVar] ?? '';
  if (user === '' && pass === '') return undefined;
  if (user === '') throw new Error(`${userVar} is required when ${passVar} is set`);
  if (pass === '') throw new Error(`${passVar} is required when ${userVar} is set`);
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(user)) throw new Error(`${userVar} must be 1-64 letters, digits, _ or -`);
  return { user, pass, inboxPrefix: inboxPrefixOf(user) };
}

/**
 * The bus connection a service's config names: the NATS URL, the subject prefix and, when set, the
 * service's credentials (their `inboxPrefix` with them). Spread into `connectBus` beside the
 * connection's name and log.
 */
export function busConnection(config: Pick<Config, 'natsUrl' | 'natsPrefix' | 'natsCredentials'>): {
  url: string;
  prefix: string;
  credentials?: NatsCredentials;
} {
  const { natsUrl: url, natsPrefix: prefix, natsCredentials: credentials } = config;
  return credentials === undefined ? { url, prefix } : { url, prefix, credentials };
}

const natsCredentialsField = (c: NatsCredentials | undefined): { natsCredentials?: NatsCredentials } =>
  c === undefined ? {} : { natsCredentials: c };

/** An OAuth client registered with a vendor (its secret, if any, is confidential). */
export interface VendorClient {
  clientId: string;
  clientSecret?: string;
}

export interface ProxySettings {
  /** Calls in flight at once per (account, server), across every instance; 0 = no cap (`PROXY_MAX_CONCURRENCY_PER_SERVER`). */
  maxConcurrencyPerServer: number;
  /** Calls per second per (account, server), across every instance; 0 = no limit (`PROXY_RATE_PER_SERVER`). */
  ratePerServer: number;
  /** Idle time after which a run's pool closes (`PROXY_IDLE_MS`). */
  idleMs: number;
  /**
   * Whether legacy (2025-11-25) connections declare elicitation and answer a server's pushed
   * `elicitation/create` (held for a person like an `input_required`; the MCP client answers it on
   * the lean call path too) (`PROXY_LEGACY_ELICITATION`, `on` by default; `off`: no elicitation is
   * declared, so a legacy server cannot ask). Absent: on.
   */
  legacyElicitation?: boolean;
  /** Brokered tasks (docs/tasks.md); absent: the defaults of {@link DEFAULT_TASK_SETTINGS}. */
  tasks?: TaskSettings;
}

export interface TaskSettings {
  /** The longest a task is kept, whatever its server asks (`TASK_MAX_TTL_MS`, 24 h); it ends `expired` then. */
  maxTtlMs: number;
  /** How long an instance's claim on a task's polling holds without renewal (`TASK_LEASE_MS`, 10 s): another takes over after it. */
  leaseMs: number;
  /** Bounds on a server's `pollInterval` (`TASK_POLL_MIN_MS` 250 ms, `TASK_POLL_MAX_MS` 30 s). */
  pollMinMs: number;
  pollMaxMs: number;
}

export const DEFAULT_TASK_SETTINGS: Readonly<TaskSettings> = {
  maxTtlMs: 24 * 3_600_000,
  leaseMs: 10_000,
  pollMinMs: 250,
  pollMaxMs: 30_000,
};

/** Defaults of {@link ProxySettings}: generous enough for one busy run, small enough to protect a server. */
export const DEFAULT_PROXY_SETTINGS: Readonly<ProxySettings> = {
  maxConcurrencyPerServer: 64,
  ratePerServer: 200,
  idleMs: 300_000,
};

/** An approval waits 10 minutes for a decision by default, and an approved call 10 minutes more to be re-sent (docs/limits.md#approvals-and-input-requests). */
export const DEFAULT_APPROVAL_TTL_MS = 10 * 60_000;

const DEFAULT_PORTS = { registry: 8080, projector: 8081, proxy: 8082 } as const;

function list(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/**
 * Parses `SECRETS_KEYRING`: `id:base64key[,id:base64key…]`, oldest first, each key 32 bytes.
 * Throws a message that names the entry, never the key material.
 */
export function parseKeyring(value: string | undefined): KeyringEntry[] {
  const entries = list(value).map((item, i) => {
    const sep = item.indexOf(':');
    if (sep <= 0) throw new Error(`SECRETS_KEYRING entry ${i + 1} must be id:base64key`);
    const id = item.slice(0, sep);
    const key = Buffer.from(item.slice(sep + 1), 'base64');
    if (!/^[A-Za-z0-9_-]{1,32}$/.test(id)) throw new Error(`SECRETS_KEYRING entry ${i + 1} has an invalid id`);
    if (key.length !== 32) throw new Error(`SECRETS_KEYRING key ${id} must be 32 bytes (base64)`);
    return { id, key };
  });
  const ids = new Set(entries.map((e) => e.id));
  if (ids.size !== entries.length) throw new Error('SECRETS_KEYRING has a duplicate key id');
  return entries;
}

/**
 * Parses `name=value[,name=value…]` lists: each entry split at its first `=`, the name checked
 * against `nameRe`, the value handed to `parse` (undefined: refused). Throws naming the variable
 * and the entry's position, never its value (it may be a secret).
 */
function parseNamedList<T>(
  value: string | undefined,
  variable: string,
  nameRe: RegExp,
  form: string,
  parse: (raw: string) => T | undefined,
): Record<string, T> {
  const out: Record<string, T> = {};
  for (const [i, item] of list(value).entries()) {
    const sep = item.indexOf('=');
    const name = item.slice(0, sep);
    const parsed = sep > 0 && nameRe.test(name) ? parse(item.slice(sep + 1)) : undefined;
    if (parsed === undefined) throw new Error(`${variable} entry ${i + 1} must be ${form}`);
    out[name] = parsed;
  }
  return out;
}

const SLUG_RE = /^[a-z][a-z0-9_]{1,30}$/;
const VENDOR_RE = /^[a-z][a-z0-9_-]{0,63}$/;
const url = (raw: string): string | undefined => (URL.canParse(raw) ? raw : undefined);

/** Parses `BUILTIN_ENDPOINTS`: `slug=url[,slug=url…]`; throws naming the entry. */
export function parseBuiltinEndpoints(value: string | undefined): Record<string, string> {
  return parseNamedList(value, 'BUILTIN_ENDPOINTS', SLUG_RE, 'slug=url', url);
}

/** Parses `BUILTIN_TOKEN_ENDPOINTS`: `vendor=url[,vendor=url…]`; throws naming the entry. */
export function parseBuiltinTokenEndpoints(value: string | undefined): Record<string, string> {
  return parseNamedList(value, 'BUILTIN_TOKEN_ENDPOINTS', VENDOR_RE, 'vendor=url', url);
}

/**
 * Parses `BUILTIN_VENDOR_CLIENTS`: `vendor=clientId[:clientSecret][,…]` (a client id holds no `:`).
 * Throws naming the entry, never its secret.
 */
export function parseBuiltinVendorClients(value: string | undefined): Record<string, VendorClient> {
  return parseNamedList(value, 'BUILTIN_VENDOR_CLIENTS', VENDOR_RE, 'vendor=clientId[:clientSecret]', (rest) => {
    const colon = rest.indexOf(':');
    const clientId = colon < 0 ? rest : rest.slice(0, colon);
    const clientSecret = colon < 0 ? undefined : rest.slice(colon + 1);
    if (clientId === '' || clientSecret === '') return undefined;
    return { clientId, ...(clientSecret !== undefined ? { clientSecret } : {}) };
  });
}

/** How accounts come to exist: by any key's first write (`open`), or by an operator only (`closed`). */
export type AccountCreation = 'open' | 'closed';

function parseAccounts(env: NodeJS.ProcessEnv): AccountCreation {
  const v = env.ACCOUNTS ?? '';
  if (v === '' || v === 'open') return 'open';
  if (v === 'closed') return 'closed';
  throw new Error('ACCOUNTS must be open or closed');
}

export function loadConfig(service: keyof typeof DEFAULT_PORTS, env: NodeJS.ProcessEnv): Config {
  const profile = parseProfile(env);
  const keyringText = env.SECRETS_KEYRING ?? (profile === 'local' ? LOCAL_DEV_KEYRING : undefined);
  if (keyringText === undefined && service !== 'projector') {
    throw new Error('SECRETS_KEYRING is required in the production profile (id:base64key of 32 bytes)');
  }
  const keyring = parseKeyring(keyringText);
  refuseDevelopmentKeys(profile, keyring);
  const style = env.TOOL_NAME_STYLE ?? 'double_underscore';
  if (style !== 'double_underscore' && style !== 'prefixed') {
    throw new Error('TOOL_NAME_STYLE must be double_underscore or prefixed');
  }
  const level = env.LOG_LEVEL ?? 'info';
  if (level !== 'debug' && level !== 'info' && level !== 'warn' && level !== 'error') {
    throw new Error('LOG_LEVEL must be debug, info, warn or error');
  }
  // Unset or empty: the service's default port (0, given explicitly, picks a free one).
  const port = portSetting(env, 'HTTP_PORT', DEFAULT_PORTS[service]);
  return {
    databaseUrl: env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/mcpx',
    natsUrl: env.NATS_URL ?? 'nats://127.0.0.1:4222',
    ...natsCredentialsField(parseNatsCredentials(env)),
    redisUrl: env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    natsPrefix: env.NATS_PREFIX ?? '',
    redisPrefix: env.REDIS_PREFIX ?? 'mcpx:',
    httpPort: port,
    httpHost: env.HTTP_HOST ?? '127.0.0.1',
    ...parseInternalHttp(service, env, port),
    otlpEndpoint: env.OTEL_EXPORTER_OTLP_ENDPOINT || undefined,
    toolNameStyle: style,
    keyring,
    outbound: {
      profile,
      allowHttpHosts: list(env.OUTBOUND_ALLOW_HTTP_HOSTS),
      allowPrivate: list(env.OUTBOUND_ALLOW_PRIVATE),
    },
    instanceId: env.INSTANCE_ID ?? `${service}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`,
    logLevel: level,
    proxy: {
      maxConcurrencyPerServer: Math.floor(
        nonNegativeNumberSetting(
          env,
          'PROXY_MAX_CONCURRENCY_PER_SERVER',
          DEFAULT_PROXY_SETTINGS.maxConcurrencyPerServer,
        ),
      ),
      ratePerServer: nonNegativeNumberSetting(env, 'PROXY_RATE_PER_SERVER', DEFAULT_PROXY_SETTINGS.ratePerServer),
      idleMs: zeroMeansDefaultSetting(env, 'PROXY_IDLE_MS', DEFAULT_PROXY_SETTINGS.idleMs),
      legacyElicitation: onOffSetting(env, 'PROXY_LEGACY_ELICITATION', true),
      tasks: {
        maxTtlMs: zeroMeansDefaultSetting(env, 'TASK_MAX_TTL_MS', DEFAULT_TASK_SETTINGS.maxTtlMs),
        leaseMs: zeroMeansDefaultSetting(env, 'TASK_LEASE_MS', DEFAULT_TASK_SETTINGS.leaseMs),
        pollMinMs: zeroMeansDefaultSetting(env, 'TASK_POLL_MIN_MS', DEFAULT_TASK_SETTINGS.pollMinMs),
        pollMaxMs: zeroMeansDefaultSetting(env, 'TASK_POLL_MAX_MS', DEFAULT_TASK_SETTINGS.pollMaxMs),
      },
    },
    approvalTtlMs: zeroMeansDefaultSetting(env, 'APPROVAL_TTL_MS', DEFAULT_APPROVAL_TTL_MS),
    heldEntries: integerSetting(env, 'REGISTRY_HELD_ENTRIES', { fallback: 4, min: 1, max: 8 }),
    builtinEndpoints: parseBuiltinEndpoints(env.BUILTIN_ENDPOINTS),
    builtinTokenEndpoints: parseBuiltinTokenEndpoints(env.BUILTIN_TOKEN_ENDPOINTS),
    builtinVendorClients: parseBuiltinVendorClients(env.BUILTIN_VENDOR_CLIENTS),
    quotas: parseQuotas(env),
    accounts: parseAccounts(env),
    trustedProxies: (env.TRUSTED_PROXIES ?? '')
      .split(',')
      .map((e) => e.trim())
      .filter((e) => e !== ''),
    pinAudit: parsePinAudit(env),
    activity: parseActivity(env),
  };
}
