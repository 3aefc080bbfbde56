import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { InboundGuard, refusalMessage, type InboundRefusal } from '@mcpx/inbound';
import type { AuthorizationServerRoutes } from './index.js';
import { NO_STORE_HEADERS, sendJson } from './pages.js';
import { OPEN_CORS } from './token.js';

/**
 * A refusal of the inbound bounds (`@mcpx/inbound`: deadline 408, budget 503, too large 413) as an
 * OAuth error: `invalid_request`, or `temporarily_unavailable` for the budget.
 */
export function answerInboundRefusal(_req: IncomingMessage, res: ServerResponse, r: InboundRefusal): void {
  sendJson(
    res,
    r.status,
    {
      error: r.reason === 'budget' ? 'temporarily_unavailable' : 'invalid_request',
      error_description: refusalMessage(r),
    },
    { ...NO_STORE_HEADERS, ...OPEN_CORS },
  );
}

/**
 * The public face: the authorization server's routes (metadata, authorize, continue, token,
 * revoke) and `GET /healthz`; anything else 404. Every socket is admitted by the inbound guard
 * (its deadlines, its sockets per address) and every body is read through it.
 */
export function createHttpFace(deps: {
  inbound: InboundGuard;
  routes: AuthorizationServerRoutes;
  isReady: () => boolean;
}): Server {
  const server = createServer(InboundGuard.serverOptions, (req, res) => {
    if (!deps.inbound.admit(req, res)) return;
    const url = new URL(req.url ?? '/', 'http://authorization-server');
    if (deps.routes(req, res, url)) return;
    if (req.method === 'GET' && url.pathname === '/healthz') {
      const ready = deps.isReady();
      sendJson(res, ready ? 200 : 503, { ok: ready, service: 'authorization-server' }, { 'cache-control': 'no-store' });
      return;
    }
    sendJson(
      res,
      404,
      { error: 'not_found', error_description: `no route ${req.method} ${url.pathname}` },
      NO_STORE_HEADERS,
    );
  });
  deps.inbound.attach(server);
  return server;
}
