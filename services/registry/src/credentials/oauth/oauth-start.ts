import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '@mcpx/log';
import { withSpan, type Tracer } from '@mcpx/telemetry';
import type { OAuthTickets } from './browser-binding.js';
import type { OAuthConnectionsRepository } from './oauth-connections.repository.js';
import { OAUTH_PAGE_HEADERS, oauthPage } from './oauth-pages.js';

export interface OAuthStartDeps {
  tickets: OAuthTickets;
  store: Pick<OAuthConnectionsRepository, 'pendingStateHash'>;
  log: Logger;
  tracer?: Tracer;
}

const ASK_AGAIN = 'Ask for a new one: Authorize in the console, or `mcpx servers auth <name>`.';

/**
 * `GET /v1/oauth/start?ticket=…`: the browser that opens a ticket (first, and within its life)
 * gets the binding cookie of that authorization and is sent to the authorization server. A used,
 * expired or unknown ticket, or one whose authorization a newer one replaced, gets a page saying
 * so and no cookie. The ticket is never logged.
 */
export function oauthStartHandler(
  deps: OAuthStartDeps,
): (req: IncomingMessage, res: ServerResponse, url: URL) => Promise<void> {
  const run = async (res: ServerResponse, url: URL): Promise<string> => {
    const taken = await deps.tickets.take(url.searchParams.get('ticket'));
    if (!taken.ok) {
      oauthPage(
        res,
        400,
        'Authorization link not valid',
        `This authorization link was already used, has expired or is not one of this registry. ${ASK_AGAIN}`,
      );
      return taken.reason;
    }
    // Only the newest authorization of a server completes: a ticket of an older one opens nothing.
    if ((await deps.store.pendingStateHash(taken.account, taken.serverId)) !== taken.stateHash) {
      oauthPage(
        res,
        400,
        'Authorization link not valid',
        `A newer authorization of this server replaced this one, or it expired. ${ASK_AGAIN}`,
      );
      return 'replaced';
    }
    const cookie = await deps.tickets.bind(taken.stateHash);
    res.writeHead(302, {
      location: taken.authorizationUrl,
      'set-cookie': deps.tickets.setCookie(taken.stateHash, cookie),
      ...OAUTH_PAGE_HEADERS,
      'content-length': 0,
    });
    res.end();
    deps.log.info('oauth authorization opened in a browser', { account: taken.account, serverId: taken.serverId });
    return 'redirected';
  };
  return async (_req, res, url) => {
    try {
      const outcome =
        deps.tracer === undefined
          ? await run(res, url)
          : await withSpan(deps.tracer, 'registry.oauth start', {}, async (span) => {
              const out = await run(res, url);
              span.setAttribute('mcpx.oauth.outcome', out);
              return out;
            });
      deps.tickets.count('start', outcome);
    } catch (err) {
      deps.tickets.count('start', 'error');
      deps.log.error('oauth start failed', { err: err as Error });
      if (!res.headersSent)
        oauthPage(
          res,
          503,
          'Authorization could not start',
          `The registry could not open this authorization right now. ${ASK_AGAIN}`,
        );
    }
  };
}
