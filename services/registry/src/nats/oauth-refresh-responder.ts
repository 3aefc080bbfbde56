import type { Subscription } from '@nats-io/transport-node';
import type { Bus } from '@mcpx/bus';
import {
  ErrorCodes,
  QueueGroups,
  WireError,
  decodeOAuthRefreshRequest,
  type OAuthRefreshAnswer,
  type OAuthRefreshRequest,
} from '@mcpx/contracts';
import { findBuiltin } from '@mcpx/domain';
import type { Logger } from '@mcpx/log';
import type { BuiltinServers } from '../builtins/builtin-servers.js';
import type { Discovery } from '../discovery/discovery.js';
import type { McpServersRepository } from '../catalog/mcp-servers.repository.js';
import { isClientCredentialsRefusal } from '../credentials/oauth/client-credentials-tokens.js';
import type { OAuthService } from '../credentials/oauth/oauth-service.js';

export interface OAuthRefreshResponderDeps {
  bus: Bus;
  servers: McpServersRepository;
  oauth: OAuthService;
  discovery: Discovery;
  log: Logger;
  /** Built-in servers: their token is the vendor connection's (absent: none are lit). */
  builtins?: BuiltinServers;
}

/**
 * Answers `registry.oauth.refresh` for the proxies (queue group `registry`). The proxy never
 * talks to an authorization server itself: it asks here, so every refresh of a server's token,
 * whoever needs it, runs under the one per-server lock of {@link OAuthService}. A refresh that
 * fails records the server `auth_required` (a discovery, so the event reaches every proxy); its
 * owner authorizes again through a ticket (AuthorizeMcpServer). The reply never carries a URL: a proxy
 * hands its answer to a runtime (a model), which must learn only that the owner has to
 * authorize, never a link that would complete the owner's authorization for whoever opens it.
 */
export function answerOAuthRefresh(deps: OAuthRefreshResponderDeps): Subscription {
  const { bus, log } = deps;
  // The bus decodes the request (a malformed one is answered invalid_input, naming the field) and
  // guards the callback: nothing thrown here reaches nats.js, which would close the connection.
  return bus.serve(bus.subjects.registryOAuthRefresh, QueueGroups.registry, decodeOAuthRefreshRequest, (req) =>
    refresh(deps, req).catch((e: unknown) => {
      log.warn('oauth refresh for a proxy failed', { account: req.account, server: req.server, err: e as Error });
      // A failed exchange with the authorization server is a transport fault, not this service's.
      throw e instanceof WireError
        ? e
        : new WireError(
            ErrorCodes.transportError,
            `OAuth refresh failed: ${(e as Error).message?.slice(0, 200) ?? 'unknown error'}`,
          );
    }),
  );
}

async function refresh(deps: OAuthRefreshResponderDeps, req: OAuthRefreshRequest): Promise<OAuthRefreshAnswer> {
  const server = await deps.servers.find(req.account, req.server);
  if (server === null && deps.builtins !== undefined && (await deps.builtins.find(req.account, req.server)) !== null)
    return refreshVendor(deps.builtins, req);
  if (server === null) throw new WireError(ErrorCodes.notFound, `no MCP server named ${req.server}`);
  if (server.config.auth !== 'oauth') throw new WireError(ErrorCodes.invalidInput, `${req.server} does not use OAuth`);
  const outcome = await deps.oauth.refreshStale(server, req.staleTokenHash).catch(async (e: unknown) => {
    // Refused client credentials: a discovery records the server's error for its owner (and every proxy).
    if (isClientCredentialsRefusal(e)) await deps.discovery.discover(server, 'refresh').catch(() => undefined);
    throw e;
  });
  if (outcome.state === 'authorized') return { state: 'authorized' };
  // No token (the owner never authorized, or a refused refresh already forgot it): nothing to
  // start here. Whoever authorizes asks for a ticket (AuthorizeMcpServer); a pending one, which
  // someone may be completing right now, is left alone. Already recorded: no new discovery.
  if (outcome.state === 'no_tokens' && server.status.state === 'auth_required') {
    return { state: 'auth_required', ...(server.status.error ? { error: server.status.error } : {}) };
  }
  // Recorded the way a discovery does (the event tells every proxy); the status carries no URL.
  const seen = await deps.discovery.discover(server, 'refresh');
  if (seen.status.state !== 'auth_required') return { state: 'authorized' };
  deps.log.info('oauth refresh refused: the owner must authorize again', {
    account: server.accountId,
    server: server.name,
    outcome: outcome.state,
  });
  return { state: 'auth_required', ...(seen.status.error ? { error: seen.status.error } : {}) };
}

/**
 * A built-in's token is its vendor connection's: refreshed under the per-vendor lock, compared
 * with the token the proxy holds. Refused: the owner must connect the vendor again (no URL).
 */
async function refreshVendor(builtins: BuiltinServers, req: OAuthRefreshRequest): Promise<OAuthRefreshAnswer> {
  const outcome = await builtins.refreshVendor(req.account, req.server, req.staleTokenHash);
  if (outcome === 'gone') throw new WireError(ErrorCodes.notFound, `no MCP server named ${req.server}`);
  if (outcome === 'refused') return { state: 'auth_required', vendor: findBuiltin(req.server)?.vendor ?? req.server };
  return { state: 'authorized' };
}
