import { SpanKind, type Counter, type Meter, type Tracer } from '@opentelemetry/api';
import type { VendorClient } from '@mcpx/config';
import { ErrorCodes, WireError } from '@mcpx/contracts';
import { findVendor, vendorTokenEndpoint, type BuiltinVendor } from '@mcpx/domain';
import type { SingleFlight } from '@mcpx/shared-state';
import type { Logger } from '@mcpx/log';
import { boundedOAuthFetch, redactSecrets } from '@mcpx/mcp-client';
import { safeUrlForTelemetry, withSpan } from '@mcpx/telemetry';
import { compareAndRefresh, type RefreshOutcome } from './compare-and-refresh.js';
import type { VendorConnectionsRepository, VendorTokens } from './vendor-connections.repository.js';

/** Longest a refresh may hold the per-vendor lock (the token request is bounded well below it). */
const LOCK_TTL_MS = 30_000;
const TOKEN_REQUEST_TIMEOUT_MS = 20_000;
/** Longest token we accept from a vendor (SetVendorConnection takes the same). */
const MAX_TOKEN_BYTES = 8192;
/**
 * Token endpoint `error` codes that mean the refresh token is dead (RFC 6749 §5.2 `invalid_grant`;
 * GitHub answers `bad_refresh_token` with HTTP 200). Any other failure may be ours or passing.
 */
const REFUSED = new Set(['invalid_grant', 'bad_refresh_token']);

/**
 * The renewal vocabulary of every credential ({@link RefreshOutcome}): `refused` is a missing or
 * refused refresh token (the owner must connect the vendor again), `gone` no connection.
 */
export type VendorRefreshOutcome = RefreshOutcome;

export interface VendorCredentialsDeps {
  connections: VendorConnectionsRepository;
  singleFlight: SingleFlight;
  log: Logger;
  tracer: Tracer;
  meter: Meter;
  /** The OAuth client the operator registered with each vendor (`BUILTIN_VENDOR_CLIENTS`). */
  clients: Readonly<Record<string, VendorClient>>;
  /** The operator's token endpoint overrides (`BUILTIN_TOKEN_ENDPOINTS`). */
  tokenEndpoints: Readonly<Record<string, string>>;
  /** The outbound-safe fetch. */
  fetch?: typeof fetch;
}

/**
 * Refreshes vendor connections' tokens (RFC 6749 §6) for the registry and, through
 * `registry.oauth.refresh`, for the proxies. Compare-and-refresh under a per-(account, vendor)
 * Redis lock, the single flight remote-server OAuth uses: the refresh token is presented only
 * while the stored access token is still the one the caller found stale, so a rotating refresh
 * token is presented once whoever needs a fresh token at the same moment. A refused refresh token
 * is forgotten at once, so it is never presented again.
 */
export class VendorCredentials {
  private readonly fetch: typeof fetch;
  private readonly refreshes: Counter;

  constructor(private readonly deps: VendorCredentialsDeps) {
    this.fetch = boundedOAuthFetch(deps.fetch);
    this.refreshes = deps.meter.createCounter('mcpx_vendor_token_refresh_total', {
      description: 'Vendor token refreshes by vendor and outcome',
    });
  }

  /** The vendor's tokens as stored (null: no connection). */
  tokens(account: string, vendor: string): Promise<{ connectionId: string; tokens: VendorTokens } | null> {
    return this.deps.connections.tokens(account, vendor);
  }

  /**
   * Refreshes the connection's tokens unless the stored access token is no longer the one whose
   * hash is `staleTokenHash` (absent: whatever is stored). Throws a retryable `transport_error`
   * when the vendor could not answer (the refresh token is kept).
   */
  async refreshStale(
    account: string,
    vendorName: string,
    staleTokenHash: string | undefined,
  ): Promise<VendorRefreshOutcome> {
    const vendor = findVendor(vendorName);
    if (vendor === undefined) return 'gone';
    type Stored = { connectionId: string; tokens: VendorTokens };
    const refresh = async (stored: Stored | undefined): Promise<VendorRefreshOutcome> => {
      if (stored === undefined) return 'gone';
      const refreshToken = stored.tokens.refreshToken;
      if (refreshToken === undefined) return 'refused';
      const client = this.deps.clients[vendor.name];
      if (client === undefined) {
        // The operator's to fix: the refresh token stays, usable once a client is configured.
        this.deps.log.warn(
          'vendor token expired and no OAuth client is configured to refresh it (BUILTIN_VENDOR_CLIENTS)',
          { account, vendor: vendor.name },
        );
        return 'refused';
      }
      const fresh = await this.exchange(vendor, client, refreshToken);
      // Refused: forget the refresh token (never presented again), keep the access token's hash stable.
      const next: VendorTokens = fresh ?? {
        accessToken: stored.tokens.accessToken,
        ...(stored.tokens.expiresAt !== undefined ? { expiresAt: stored.tokens.expiresAt } : {}),
      };
      if (fresh !== undefined && fresh.refreshToken === undefined) next.refreshToken = refreshToken;
      if (!(await this.deps.connections.replaceTokens(account, vendor.name, stored, next))) return 'current';
      return fresh === undefined ? 'refused' : 'refreshed';
    };
    return withSpan(
      this.deps.tracer,
      'registry.vendor_token_refresh',
      { 'mcp.account': account, 'mcpx.vendor': vendor.name },
      async (span) => {
        let outcome = 'error';
        try {
          // A follower with no stale hash takes what the holder left; one that finds the refresh
          // token forgotten (refused) says so.
          const result = await compareAndRefresh<Stored>({
            lock: (lead, follow) =>
              this.deps.singleFlight.run(
                `vendor-oauth:${account}:${vendor.name}`,
                { ttlMs: LOCK_TTL_MS },
                lead,
                follow,
              ),
            read: async () => (await this.deps.connections.tokens(account, vendor.name)) ?? undefined,
            accessToken: (s) => s.tokens.accessToken,
            staleTokenHash,
            anyTokenWillDo: false,
            followerTakesAny: true,
            whenNone: 'gone',
            refresh,
            refusedIf: (s) => s.tokens.refreshToken === undefined,
            retry: () =>
              new WireError(
                ErrorCodes.transportError,
                `another instance could not refresh the ${vendor.displayName} connection's token; try again`,
              ),
          });
          outcome = result;
          return result;
        } finally {
          span.setAttribute('mcpx.result', outcome);
          this.refreshes.add(1, { vendor: vendor.name, result: outcome });
        }
      },
    );
  }

  /** One refresh at the vendor's token endpoint: the new tokens, or undefined when the refresh token was refused. */
  private async exchange(
    vendor: BuiltinVendor,
    client: VendorClient,
    refreshToken: string,
  ): Promise<VendorTokens | undefined> {
    const endpoint = vendorTokenEndpoint(vendor, this.deps.tokenEndpoints);
    const body = new URLSearchParams({
      grant_type: 'refresh_token',
      refresh_token: refreshToken,
      client_id: client.clientId,
    });
    if (client.clientSecret !== undefined) body.set('client_secret', client.clientSecret);
    // The vendor's error code is shown: scrubbed of what was sent, in case it echoes one (`@mcpx/mcp-client`'s rule).
    const sent = [refreshToken, ...(client.clientSecret !== undefined ? [client.clientSecret] : [])];
    const failed = (why: string): WireError =>
      new WireError(
        ErrorCodes.transportError,
        `the ${vendor.displayName} token endpoint could not refresh the connection (${redactSecrets(why, sent)})`,
        { vendor: vendor.name },
      );
    return withSpan(
      this.deps.tracer,
      'oauth token refresh',
      { 'url.full': safeUrlForTelemetry(endpoint), 'mcpx.vendor': vendor.name },
      async () => {
        let res: Response;
        try {
          res = await this.fetch(endpoint, {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
            body,
            signal: AbortSignal.timeout(TOKEN_REQUEST_TIMEOUT_MS),
          });
        } catch (err) {
          throw failed((err as Error).name === 'TimeoutError' ? 'timed out' : 'unreachable');
        }
        const json = (await res.json().catch(() => undefined)) as Record<string, unknown> | undefined;
        const error =
          typeof json?.error === 'string' ? json.error.replace(/[^a-z0-9_.-]/gi, '').slice(0, 64) : undefined;
        if (error !== undefined && REFUSED.has(error)) return undefined;
        if (!res.ok || json === undefined || error !== undefined)
          throw failed(`HTTP ${res.status}${error ? `, ${error}` : ''}`);
        const tokens = parseTokenResponse(json);
        if (tokens === undefined) throw failed('malformed token response');
        return tokens;
      },
      { kind: SpanKind.CLIENT },
    );
  }
}

/** A token response (RFC 6749 §5.1) as we store it; undefined when it is malformed. */
function parseTokenResponse(json: Record<string, unknown>): VendorTokens | undefined {
  const token = (v: unknown): v is string =>
    typeof v === 'string' && /^[\x21-\x7e]+$/.test(v) && v.length <= MAX_TOKEN_BYTES;
  if (!token(json.access_token)) return undefined;
  if (json.refresh_token !== undefined && !token(json.refresh_token)) return undefined;
  const expiresIn = json.expires_in;
  if (expiresIn !== undefined && (typeof expiresIn !== 'number' || !Number.isFinite(expiresIn) || expiresIn <= 0))
    return undefined;
  return {
    accessToken: json.access_token,
    ...(json.refresh_token !== undefined ? { refreshToken: json.refresh_token } : {}),
    ...(typeof expiresIn === 'number' ? { expiresAt: new Date(Date.now() + expiresIn * 1000).toISOString() } : {}),
  };
}
