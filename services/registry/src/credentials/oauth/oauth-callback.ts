import type { IncomingMessage, ServerResponse } from 'node:http';
import { WireError } from '@mcpx/contracts';
import type { Logger } from '@mcpx/log';
import type { Discovery } from '../../discovery/discovery.js';
import { describeAuthorizationError, readAuthorizationResponse } from './authorization-response.js';
import type { OAuthTickets } from './browser-binding.js';
import { oauthPage } from './oauth-pages.js';
import type { OAuthService } from './oauth-service.js';

export interface OAuthCallbackDeps {
  oauth: OAuthService;
  discovery: Discovery;
  /** The browser bindings: a callback completes only in the browser that opened the ticket. */
  tickets: OAuthTickets;
  log: Logger;
}

/**
 * Completes an authorization: the browser must present the binding cookie it got when it opened
 * the authorization's ticket (else nothing is consumed, exchanged or stored: a callback carried to
 * another browser, or an authorization URL opened without its ticket, completes nothing and the
 * owner's own browser can still complete it); the response's `state` must be a live pending one
 * and its `iss` the authorization server's the authorization was started at (RFC 9207) before the
 * code is exchanged; then discovers the server with the new token and shows a small page. An
 * error response is shown only once its issuer checks out, and then only as a registered error
 * code (in a mix-up its values are the attacker's). Neither the code, the state, the cookie nor
 * any token is logged or echoed.
 */
export function oauthCallbackHandler(
  deps: OAuthCallbackDeps,
): (req: IncomingMessage, res: ServerResponse, url: URL) => Promise<void> {
  return async (req, res, url) => {
    const resp = readAuthorizationResponse(url.searchParams);
    const state = resp.state;
    if (state === undefined) {
      oauthPage(
        res,
        400,
        resp.error !== undefined ? 'Authorization was not granted' : 'Authorization failed',
        resp.error !== undefined
          ? 'The authorization was refused. You can close this window and try again.'
          : 'The callback needs a code and a state.',
      );
      return;
    }
    if (!(await boundHere(deps, req, res, state))) return;
    deps.tickets.count('callback', 'bound');
    // Past this point the authorization ends, whatever the outcome: the binding goes with it.
    const clear = deps.tickets.clearCookie(state);
    const end = (): Promise<void> =>
      deps.tickets
        .release(state)
        .catch((err: unknown) => deps.log.warn('oauth binding not released (it expires)', { err: err as Error }));
    try {
      if (resp.error !== undefined) {
        await refused(deps, res, resp.error, state, resp.iss, clear);
        await end();
        return;
      }
      if (resp.code === undefined) {
        oauthPage(res, 400, 'Authorization failed', 'The callback needs a code and a state.');
        return;
      }
      const server = await deps.oauth.complete({ code: resp.code, state, iss: resp.iss });
      await end();
      const discovered = await deps.discovery.discover(server, 'authorized');
      const tools = discovered.tools.length;
      const ok = discovered.status.state === 'ok';
      oauthPage(
        res,
        200,
        ok ? `Connected to ${discovered.name}` : `Authorized ${discovered.name}`,
        ok
          ? `${tools} tool${tools === 1 ? '' : 's'} found. You can close this window.`
          : `The server still answers: ${discovered.status.error ?? discovered.status.state}.`,
        { close: ok, setCookie: clear },
      );
    } catch (err) {
      if (err instanceof WireError) {
        oauthPage(res, 400, 'Authorization failed', err.message, { setCookie: clear });
        return;
      }
      deps.log.error('oauth callback failed', { err: err as Error });
      oauthPage(
        res,
        502,
        'Authorization failed',
        'The authorization server could not complete the exchange. Start the authorization again.',
        { setCookie: clear },
      );
    }
  };
}

/** Whether the browser finishing the authorization is the one that opened it (the ticket's cookie); refused with a page if not. */
async function boundHere(
  deps: OAuthCallbackDeps,
  req: IncomingMessage,
  res: ServerResponse,
  state: string,
): Promise<boolean> {
  let bound: boolean;
  try {
    bound = await deps.tickets.bound(state, req.headers.cookie);
  } catch (err) {
    deps.log.error('oauth callback could not check the browser binding', { err: err as Error });
    oauthPage(
      res,
      503,
      'Authorization failed',
      'The registry could not check this browser right now. Open the callback again in a moment.',
    );
    return false;
  }
  if (!bound) {
    deps.tickets.count('callback', 'unbound');
    deps.log.warn('oauth callback refused: not the browser that opened the authorization');
    oauthPage(
      res,
      400,
      'Authorization not started in this browser',
      'This authorization was started in another browser, or its link was opened without the registry (the browser that opened it must finish it). Start it again from the console (Authorize) or with `mcpx servers auth <name>`, in this browser.',
    );
    return false;
  }
  return true;
}

/** An error response: ends its pending authorization; says what the server answered only if the response is from it. */
async function refused(
  deps: OAuthCallbackDeps,
  res: ServerResponse,
  error: string,
  state: string,
  iss: string | undefined,
  clear: string,
): Promise<void> {
  const retry = 'You can close this window and try again.';
  const { issuerOk } = await deps.oauth.refuse({ state, iss });
  if (!issuerOk) {
    oauthPage(
      res,
      400,
      'Authorization failed',
      'This answer does not come from the authorization server the authorization was started at. Start the authorization again.',
      { setCookie: clear },
    );
    return;
  }
  oauthPage(
    res,
    400,
    'Authorization was not granted',
    `The authorization server answered: ${describeAuthorizationError(error)}. ${retry}`,
    { setCookie: clear },
  );
}
