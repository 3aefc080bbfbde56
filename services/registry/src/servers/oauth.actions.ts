import { ErrorCodes, WireError, type RedactedMcpServer } from '@mcpx/contracts';
import { isPostgresUnavailable, type Db } from '@mcpx/db';
import { describeOAuthError } from '@mcpx/mcp-client';
import { isRedisUnavailable } from '@mcpx/shared-state';
import { auditBy, recordAudit } from '../audit/audit-log.js';
import { usesClientCredentials } from '../credentials/oauth/client-credentials-tokens.js';
import { redactServer } from './redaction.js';
import type { McpServerRecord } from '../catalog/mcp-servers.repository.js';
import { validateServerNameInput } from './validation.js';
import type { ServersAction, ServersDeps } from './servers-deps.js';

/**
 * The answer for a server just discovered. An oauth server that answered 401 with OAuth metadata
 * gets its stored tokens refreshed (then it is discovered again) or, without usable tokens, an
 * authorization URL for the signer to open: a single-use ticket URL of the registry (see
 * `OAuthTickets`), never the authorization server's, so that only the browser that opens it can
 * complete the authorization. Abandoning it costs nothing. The status never carries a URL.
 */
export async function withAuthorization(
  deps: ServersDeps,
  server: McpServerRecord,
  redact: (server: McpServerRecord) => Promise<RedactedMcpServer>,
  opts: { fresh?: boolean; issued?: (server: McpServerRecord, trx: Db) => Promise<void> } = {},
): Promise<{ server: RedactedMcpServer; authorizationUrl?: string; authorizationError?: string }> {
  const oauth = deps.oauth;
  const wanted = opts.fresh === true || server.status.state === 'auth_required';
  // A client credentials server never waits for an owner: its discovery gets tokens itself.
  if (oauth === undefined || server.config.auth !== 'oauth' || !wanted || usesClientCredentials(server))
    return { server: await redact(server) };
  const issued = opts.issued;
  try {
    const challenge = deps.discovery.resourceMetadataUrl(server.id);
    const metadata = challenge ? { resourceMetadataUrl: challenge } : {};
    // With `issued`, the ticket is issued in the transaction that stores the authorization, and
    // whatever `issued` writes there commits with it: the ticket of an authorization that was
    // not stored leads nowhere (the start page finds another pending state).
    let ticket: string | undefined;
    const started =
      issued === undefined
        ? {}
        : {
            started: async (authorizationUrl: string, trx: Db): Promise<void> => {
              ticket = await oauth.ticketUrl(server, authorizationUrl);
              await issued(server, trx);
            },
          };
    let outcome = await oauth.ensure(server, { fresh: opts.fresh === true, ...metadata, ...started });
    if (outcome.state === 'authorized') {
      const rediscovered = await deps.discovery.discover(server, 'authorized');
      if (rediscovered.status.state !== 'auth_required') return { server: await redact(rediscovered) };
      // The refreshed token is refused too: only a new authorization helps.
      server = rediscovered;
      outcome = await oauth.ensure(server, { fresh: true, ...metadata, ...started });
    }
    if (outcome.state === 'authorized') return { server: withoutStatusUrl(await redact(server)) };
    return {
      server: withoutStatusUrl(await redact(server)),
      authorizationUrl: ticket ?? (await oauth.ticketUrl(server, outcome.authorizationUrl)),
    };
  } catch (err) {
    deps.log.warn('oauth authorization could not start', {
      account: server.accountId,
      server: server.name,
      err: err as Error,
    });
    return { server: await redact(server), authorizationError: `OAuth: ${authorizationFailure(err)}` };
  }
}

/**
 * Why an authorization could not start, as the signer reads it: a store that stopped answering
 * is named (its driver's text tells a signer nothing); the server stays as it was recorded.
 */
function authorizationFailure(err: unknown): string {
  const store = isPostgresUnavailable(err) ? 'postgres' : isRedisUnavailable(err) ? 'redis' : undefined;
  if (store === undefined) return describeOAuthError(err);
  return `${store} was unavailable; the authorization was not started (AuthorizeMcpServer starts it)`;
}

/**
 * A status recorded before authorizations were bound to a browser may still hold the
 * authorization server's URL, which no longer completes on its own: not shown.
 */
function withoutStatusUrl(server: RedactedMcpServer): RedactedMcpServer {
  if (server.status.authorizationUrl === undefined) return server;
  const { authorizationUrl: _dropped, ...status } = server.status;
  return { ...server, status };
}

/** `AuthorizeMcpServer {name}`: a fresh authorization URL for an oauth server. */
export const authorizeMcpServer: ServersAction<'AuthorizeMcpServer'> = async (deps, caller, action) => {
  const name = validateServerNameInput(action.name, deps.style);
  const server = await deps.servers.find(caller.account, name);
  if (server === null) throw new WireError(ErrorCodes.notFound, `name: no MCP server named ${name}`, { field: 'name' });
  if (server.config.auth !== 'oauth')
    throw new WireError(ErrorCodes.invalidInput, `name: ${name} does not use OAuth (config.auth is not oauth)`, {
      field: 'name',
    });
  if (usesClientCredentials(server)) {
    throw new WireError(
      ErrorCodes.invalidInput,
      `name: ${name} uses the OAuth client credentials grant: nobody signs in for it (RefreshMcpServer discovers it again)`,
      { field: 'name' },
    );
  }
  // Read before the authorization starts (its token refresh rediscovers and records): Postgres
  // lost after that cannot answer "not run" for what was stored.
  const overrides = await deps.permissions.forServer(caller.account, server.id);
  // Who asked for an authorization of which server, and how it went: never the URL (its ticket
  // completes the authorization), a token or the authorization server's error text.
  const audit = (db: Db, outcome: string, state: string): Promise<void> =>
    recordAudit(db, {
      ...auditBy(caller),
      action: 'AuthorizeMcpServer',
      target: { kind: 'server', name: server.name },
      after: { outcome, state },
    });
  // An authorization URL issued is recorded in the transaction that stores the authorization:
  // Postgres lost there stores neither (the answer is a failed authorization, recorded as one).
  const out = await withAuthorization(
    deps,
    server,
    async (s) => redactServer(s, deps.style, overrides, { role: caller.role }),
    { fresh: true, issued: (s, trx) => audit(trx, 'authorization_url_issued', s.status.state) },
  );
  if (out.authorizationUrl === undefined)
    await audit(deps.db, out.authorizationError !== undefined ? 'failed' : 'authorized', out.server.status.state);
  return out;
};
