import type { IncomingMessage, ServerResponse } from 'node:http';
import { WireError } from '@mcpx/contracts';
import type { Logger } from '@mcpx/log';
import type { Discovery } from '../discovery.js';
import type { OAuthService } from './oauth-service.js';

/** `GET /v1/oauth/callback`: where the authorization server sends the owner's browser back. */
export const OAUTH_CALLBACK_PATH = '/v1/oauth/callback';

export interface OAuthCallbackDeps {
  oauth: OAuthService;
  discovery: Discovery;
  log: Logger;
}

/**
 * Completes an authorization: exchanges the code (its `state` must be a live pending one), then
 * discovers the server with the new token and shows a small page. Neither the code, the state nor
 * any token is logged or echoed.
 */
export function oauthCallbackHandler(deps: OAuthCallbackDeps): (req: IncomingMessage, res: ServerResponse, url: URL) => Promise<void> {
  return async (_req, res, url) => {
    const error = url.searchParams.get('error');
    const code = url.searchParams.get('code');
    const state = url.searchParams.get('state');
    if (error !== null) {
      page(res, 400, 'Authorization was not granted', `The authorization server answered: ${error.slice(0, 100)}. You can close this window and try again.`);
      return;
    }
    if (code === null || code === '' || state === null || state === '') {
      page(res, 400, 'Authorization failed', 'The callback needs a code and a state.');
      return;
    }
    try {
      const server = await deps.oauth.complete(code, state);
      const discovered = await deps.discovery.discover(server, 'refresh');
      const tools = discovered.tools.length;
      const ok = discovered.status.state === 'ok';
      page(
        res,
        200,
        ok ? `Connected to ${discovered.name}` : `Authorized ${discovered.name}`,
        ok ? `${tools} tool${tools === 1 ? '' : 's'} found. You can close this window.` : `The server still answers: ${discovered.status.error ?? discovered.status.state}.`,
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

function page(res: ServerResponse, status: number, title: string, text: string): void {
  const body = `<!doctype html><meta charset="utf-8"><title>${escapeHtml(title)}</title><h1>${escapeHtml(title)}</h1><p>${escapeHtml(text)}</p>`;
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
