import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { WireError } from '@mcpx/contracts';
import type { Logger } from '@mcpx/log';
import type { Discovery } from '../discovery.js';
import { describeAuthorizationError, readAuthorizationResponse } from './authorization-response.js';
import type { OAuthService } from './oauth-service.js';

export interface OAuthCallbackDeps {
  oauth: OAuthService;
  discovery: Discovery;
  log: Logger;
}

/**
 * Completes an authorization: the response's `state` must be a live pending one and its `iss`
 * the authorization server's the authorization was started at (RFC 9207) before the code is
 * exchanged; then discovers the server with the new token and shows a small page. An error
 * response is shown only once its issuer checks out, and then only as a registered error code
 * (in a mix-up its values are the attacker's). Neither the code, the state nor any token is
 * logged or echoed.
 */
export function oauthCallbackHandler(deps: OAuthCallbackDeps): (req: IncomingMessage, res: ServerResponse, url: URL) => Promise<void> {
  return async (_req, res, url) => {
    const resp = readAuthorizationResponse(url.searchParams);
    try {
      if (resp.error !== undefined) {
        await refused(deps, res, resp.error, resp.state, resp.iss);
        return;
      }
      if (resp.code === undefined || resp.state === undefined) {
        page(res, 400, 'Authorization failed', 'The callback needs a code and a state.');
        return;
      }
      const server = await deps.oauth.complete({ code: resp.code, state: resp.state, iss: resp.iss });
      const discovered = await deps.discovery.discover(server, 'refresh');
      const tools = discovered.tools.length;
      const ok = discovered.status.state === 'ok';
      page(
        res,
        200,
        ok ? `Connected to ${discovered.name}` : `Authorized ${discovered.name}`,
        ok ? `${tools} tool${tools === 1 ? '' : 's'} found. You can close this window.` : `The server still answers: ${discovered.status.error ?? discovered.status.state}.`,
        ok,
      );
    } catch (err) {
      if (err instanceof WireError) {
        page(res, 400, 'Authorization failed', err.message);
        return;
      }
      deps.log.error('oauth callback failed', { err: err as Error });
      page(res, 502, 'Authorization failed', 'The authorization server could not complete the exchange. Start the authorization again.');
    }
  };
}

/** An error response: ends its pending authorization; says what the server answered only if the response is from it. */
async function refused(deps: OAuthCallbackDeps, res: ServerResponse, error: string, state: string | undefined, iss: string | undefined): Promise<void> {
  const retry = 'You can close this window and try again.';
  if (state === undefined) {
    page(res, 400, 'Authorization was not granted', `The authorization was refused. ${retry}`);
    return;
  }
  const { issuerOk } = await deps.oauth.refuse({ state, iss });
  if (!issuerOk) {
    page(res, 400, 'Authorization failed', 'This answer does not come from the authorization server the authorization was started at. Start the authorization again.');
    return;
  }
  page(res, 400, 'Authorization was not granted', `The authorization server answered: ${describeAuthorizationError(error)}. ${retry}`);
}

/**
 * A page that connected closes its window: the console's popup (the console learns the outcome
 * from its event stream). Browsers refuse to close a tab the owner opened, which then keeps the
 * page. The one inline script is allowed by its hash; nothing else runs or loads.
 */
const CLOSE_SCRIPT = 'window.close()';
const CSP = `default-src 'none'; script-src 'sha256-${createHash('sha256').update(CLOSE_SCRIPT).digest('base64')}'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;

function page(res: ServerResponse, status: number, title: string, text: string, close = false): void {
  const script = close ? `<script>${CLOSE_SCRIPT}</script>` : '';
  const body = `<!doctype html><meta charset="utf-8"><title>${escapeHtml(title)}</title><h1>${escapeHtml(title)}</h1><p>${escapeHtml(text)}</p>${script}`;
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'content-security-policy': CSP,
    // The callback URL carries the code and state: never pass it on as a referrer.
    'referrer-policy': 'no-referrer',
    'x-content-type-options': 'nosniff',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
