import { accessTokenHash, type Transport } from '@mcpx/contracts';
import { builtinEndpoint, findBuiltin } from '@mcpx/domain';
import { secretAad, unbind, urlOrigin, type SecretBox } from '@mcpx/secrets';
import type { ProxyReads } from './read-model.js';
import {
  decodeServerConfig,
  isOwnSecretRef,
  openOAuthTokens,
  openVendorTokens,
  OAuthGrants,
  type StoredServerConfig,
} from './stored.js';

/** How a renewable token is renewed: OAuth by code (a refresh token), by client credentials, or a built-in's vendor connection. */
export type RenewalKind = 'authorization_code' | 'client_credentials' | 'vendor';

/**
 * What reaching a server takes: where it is, the headers that authenticate it, and how they
 * renew. Discovery (the registry) and a call (the proxy) both read it here, from the same rows.
 */
export interface ServerCredentials {
  url: string;
  transport?: Transport;
  /** Static headers, the server's own secret headers (each only for the origin it was sealed for), and any token's `authorization`; names lowercased. */
  headers: Record<string, string>;
  /**
   * A token the registry renews (absent: static and secret headers only, nothing to renew). Its
   * hash is what a renewal compares against, so only the token held is refreshed; `expiresAt`
   * (epoch ms) is when it should be renewed (a vendor token's only when it has a refresh token).
   */
  oauth?: { tokenHash?: string; expiresAt?: number; kind?: RenewalKind; refreshable?: boolean };
  /**
   * The server's contract pinning (`config.pin`; absent: off, as for every built-in). Read with the
   * rest of the row, so the proxy knows whether a call needs its strict check without a query of
   * its own (docs/servers.md, the registry's pins/pin-policy.ts).
   */
  pin?: 'review' | 'strict';
}

/** The server record fields a reading needs (a registry record, or a row read by name). */
export interface CredentialTarget {
  id: string;
  name: string;
  config: StoredServerConfig;
}

/**
 * Reads the credentials of a server from the registry's rows (secrets, OAuth tokens, vendor
 * tokens) through the proxy's read model. Nothing here refreshes: a token about to expire or
 * refused is renewed by the registry (its own discovery, or a proxy's `registry.oauth.refresh`),
 * then read again.
 */
export class CredentialReader {
  constructor(
    private readonly db: ProxyReads,
    private readonly box: SecretBox,
    /** The operator's built-in endpoint overrides (`BUILTIN_ENDPOINTS`). */
    private readonly builtinEndpoints: Readonly<Record<string, string>> = {},
  ) {}

  /** By name: the account's custom server, else a built-in its vendor connection lights; null when neither. */
  async byName(account: string, name: string): Promise<ServerCredentials | null> {
    const row = await this.db
      .selectFrom('registry.mcp_servers')
      .select(['id', 'config_cbor'])
      .where('account_id', '=', account)
      .where('name', '=', name)
      .executeTakeFirst();
    if (row === undefined) return this.builtin(account, name);
    return this.custom(account, { id: row.id, name, config: decodeServerConfig(row.config_cbor) });
  }

  /**
   * A custom server's: its static headers, then its own secret headers over them (a secret wins
   * over a static header of the same name, compared case-insensitively). Only the server's own
   * secrets (`mcp-<server>-<header>`) are sent, each only to the origin it was stored for: a config
   * that names another server's secret, or that moved, sends nothing. An oauth server adds its
   * stored token, only while it keeps the URL the token was issued for.
   */
  async custom(account: string, server: CredentialTarget): Promise<ServerCredentials> {
    const { config, name } = server;
    const headers: Record<string, string> = {};
    for (const [h, v] of Object.entries(config.headers ?? {})) headers[h.toLowerCase()] = v;
    const refs = Object.entries(config.secretRefs ?? {}).filter(([header, ref]) => isOwnSecretRef(name, header, ref));
    const origin = urlOrigin(config.url);
    if (refs.length > 0 && origin !== '') {
      const rows = await this.db
        .selectFrom('registry.secrets')
        .select(['name', 'key_id', 'ciphertext'])
        .where('account_id', '=', account)
        .where(
          'name',
          'in',
          refs.map(([, r]) => r),
        )
        .execute();
      const byName = new Map(rows.map((s) => [s.name, s]));
      for (const [header, ref] of refs) {
        const s = byName.get(ref);
        if (s === undefined) continue;
        const opened = unbind(this.box.open({ keyId: s.key_id, ciphertext: s.ciphertext }, secretAad(account, ref)));
        if (opened.origin !== undefined && opened.origin === origin) headers[header.toLowerCase()] = opened.value;
      }
    }
    const base = {
      url: config.url,
      ...(config.transport ? { transport: config.transport } : {}),
      headers,
      ...(config.pin === 'review' || config.pin === 'strict' ? { pin: config.pin } : {}),
    };
    if (config.auth !== 'oauth') return base;
    const kind: RenewalKind =
      config.oauthClient?.grant === OAuthGrants.clientCredentials ? 'client_credentials' : 'authorization_code';
    const row = await this.db
      .selectFrom('registry.oauth_connections')
      .select(['tokens_key_id', 'tokens_sealed', 'tokens_server_url', 'tokens_expire_at'])
      .where('account_id', '=', account)
      .where('server_id', '=', server.id)
      .executeTakeFirst();
    const tokens = openOAuthTokens(this.box, account, server.id, row, config.url);
    // No token yet: nothing is sent (the server's 401 says where to get one); the kind still says how.
    if (tokens === undefined || typeof tokens.access_token !== 'string') return { ...base, oauth: { kind } };
    headers.authorization = `Bearer ${tokens.access_token}`;
    return {
      ...base,
      oauth: {
        kind,
        tokenHash: accessTokenHash(tokens.access_token),
        refreshable: tokens.refresh_token !== undefined,
        ...(row?.tokens_expire_at ? { expiresAt: row.tokens_expire_at.getTime() } : {}),
      },
    };
  }

  /**
   * A built-in server's (docs/servers.md#built-in-servers): its endpoint (the operator's override,
   * else the descriptor's) and the access token of the account's connection to its vendor. Null
   * when `slug` is no built-in or the account has no connection to the vendor (the built-in is dark).
   */
  async builtin(account: string, slug: string): Promise<ServerCredentials | null> {
    const builtin = findBuiltin(slug);
    if (builtin === undefined) return null;
    const row = await this.db
      .selectFrom('registry.vendor_connections')
      .select(['tokens_key_id', 'tokens_sealed', 'expires_at'])
      .where('account_id', '=', account)
      .where('vendor', '=', builtin.vendor)
      .executeTakeFirst();
    if (row === undefined) return null;
    const tokens = openVendorTokens(this.box, account, builtin.vendor, row);
    const url = builtinEndpoint(builtin, this.builtinEndpoints);
    if (tokens.accessToken === '') return { url, headers: {} };
    const refreshable = tokens.refreshToken !== undefined;
    return {
      url,
      headers: { authorization: `Bearer ${tokens.accessToken}` },
      oauth: {
        kind: 'vendor',
        tokenHash: accessTokenHash(tokens.accessToken),
        refreshable,
        ...(row.expires_at && refreshable ? { expiresAt: row.expires_at.getTime() } : {}),
      },
    };
  }
}

/** Renew this long before a token expires (the registry and the proxy use the same margin). */
export const REFRESH_BEFORE_EXPIRY_MS = 60_000;

/** Whether `credentials`' token expires within {@link REFRESH_BEFORE_EXPIRY_MS}. */
export function expiring(credentials: ServerCredentials, now = Date.now()): boolean {
  const at = credentials.oauth?.expiresAt;
  return at !== undefined && at - now < REFRESH_BEFORE_EXPIRY_MS;
}
