import type { NatsConnection } from '@nats-io/transport-node';
import type { Context, Counter, Meter, Tracer } from '@opentelemetry/api';
import { request } from '@mcpx/bus';
import {
  ErrorCodes,
  WireError,
  oauthRefreshAnswerValue,
  type OAuthRefreshAnswer,
  type OAuthRefreshRequest,
  type Subjects,
} from '@mcpx/contracts';
import { expiring, REFRESH_BEFORE_EXPIRY_MS, type ServerCredentials } from '@mcpx/stored';
import { withSpan } from '@mcpx/telemetry';
import type { Catalog } from './catalog.js';

/** Refresh an access token this long before it expires (one margin, the registry's too). */
export { REFRESH_BEFORE_EXPIRY_MS };
/** How long a proxy waits for the registry's refresh (it holds a 30 s lock at most). */
const REFRESH_TIMEOUT_MS = 35_000;

export interface OAuthTokensDeps {
  nc: NatsConnection;
  subjects: Subjects;
  catalog: Catalog;
  /** A span per refresh asked of the registry, and a count by outcome (absent: neither). */
  tracer?: Tracer;
  meter?: Meter;
}

/**
 * Keeps oauth servers' access tokens fresh for the call path. The proxy never presents a refresh
 * token: it asks the registry (`registry.oauth.refresh`), which refreshes under the per-server
 * Redis lock shared by every instance, only while the stored token is still the one this proxy
 * holds (compare-and-refresh), so two racing proxies cause one refresh. Then the proxy re-reads
 * the stored token. A refused refresh is `auth_required`, with the owner's authorization URL (or,
 * for a built-in server, the vendor whose connection the owner must make again).
 */
export class OAuthTokens {
  private readonly inflight = new Map<string, Promise<ServerCredentials>>();
  private readonly refreshes: Counter | undefined;

  constructor(private readonly deps: OAuthTokensDeps) {
    this.refreshes = deps.meter?.createCounter('mcpx_proxy_token_refresh_total', {
      description: 'Token refreshes asked of the registry, by outcome',
    });
  }

  /** Whether `entry`'s token expires within {@link REFRESH_BEFORE_EXPIRY_MS}. */
  expiring(entry: ServerCredentials, now = Date.now()): boolean {
    return expiring(entry, now);
  }

  /**
   * A fresh entry for `server` after its token (held in `entry`) expired or was refused. Calls of
   * this proxy that need the same refresh share one request; its span is a child of `parent`
   * (the first asker's call or relay) when given.
   */
  refreshed(account: string, server: string, entry: ServerCredentials, parent?: Context): Promise<ServerCredentials> {
    const key = `${account}:${server}:${entry.oauth?.tokenHash ?? ''}`;
    let p = this.inflight.get(key);
    if (p === undefined) {
      p = this.observed(account, server, () => this.refresh(account, server, entry), parent).finally(() =>
        this.inflight.delete(key),
      );
      this.inflight.set(key, p);
    }
    return p;
  }

  private async observed(
    account: string,
    server: string,
    run: () => Promise<ServerCredentials>,
    parent: Context | undefined,
  ): Promise<ServerCredentials> {
    const counted = async (): Promise<ServerCredentials> => {
      let result = 'ok';
      try {
        return await run();
      } catch (err) {
        result = err instanceof WireError ? err.code : 'internal';
        throw err;
      } finally {
        this.refreshes?.add(1, { result });
      }
    };
    return this.deps.tracer
      ? withSpan(
          this.deps.tracer,
          'proxy.token_refresh',
          { 'mcp.account': account, 'mcp.server': server },
          counted,
          parent === undefined ? {} : { parent },
        )
      : counted();
  }

  private async refresh(account: string, server: string, entry: ServerCredentials): Promise<ServerCredentials> {
    const req: OAuthRefreshRequest = {
      account,
      server,
      ...(entry.oauth?.tokenHash ? { staleTokenHash: entry.oauth.tokenHash } : {}),
    };
    let reply: OAuthRefreshAnswer;
    try {
      reply = await request(
        this.deps.nc,
        this.deps.subjects.registryOAuthRefresh,
        req,
        oauthRefreshAnswerValue,
        REFRESH_TIMEOUT_MS,
      );
    } catch (err) {
      // The registry's answer (a typed error, or its malformed reply as internal) goes on as it is.
      if (err instanceof WireError) throw err;
      throw new WireError(
        ErrorCodes.transportError,
        `the ${server} MCP server's OAuth token could not be refreshed (registry unavailable: ${(err as Error).message})`,
        { server },
      );
    }
    if (reply.state === 'auth_required' && reply.vendor !== undefined) {
      // A built-in: its token is the vendor connection's, which the owner makes again.
      throw new WireError(
        ErrorCodes.authRequired,
        `the ${server} MCP server needs its owner to connect ${reply.vendor} again (the vendor's token could not be refreshed)`,
        {
          server,
          vendor: reply.vendor,
        },
      );
    }
    if (reply.state === 'auth_required') {
      throw new WireError(
        ErrorCodes.authRequired,
        `the ${server} MCP server needs its owner to authorize again (the OAuth refresh was refused)`,
        { server },
      );
    }
    this.deps.catalog.dropServer(account, server);
    const fresh = await this.deps.catalog.server(account, server);
    if (fresh === null) throw new WireError(ErrorCodes.notFound, `no MCP server named ${server}`, { server });
    return fresh;
  }
}
