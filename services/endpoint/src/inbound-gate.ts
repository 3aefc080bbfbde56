import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TrustedProxies } from '@mcpx/config/trusted-proxies';
import { hasBody, refusalMessage, type InboundGuard, type InboundRefusal } from '@mcpx/inbound';
import type { EndpointHandler } from './http.js';
import { requestHead } from './request-head.js';
import type { LeanCalls } from './lean-calls.js';
import { serveWithBody } from './web-fallback.js';

/** The largest request body the endpoint reads (the MCP SDK's own default bound). */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;

/**
 * A bounded refusal of `@mcpx/inbound` as the endpoint says errors before a request is read: a
 * JSON-RPC error without id, the connector's code in `data` naming the field (`body`) and the
 * bound (`invalid_input` for a body too slow or too large, `unavailable` for a spent budget).
 */
export function answerRefusal(_req: IncomingMessage, res: ServerResponse, r: InboundRefusal): void {
  const code = r.reason === 'budget' ? 'unavailable' : 'invalid_input';
  const body = JSON.stringify({
    jsonrpc: '2.0',
    error: {
      code: -32000,
      message: refusalMessage(r),
      data: { code, details: { field: 'body', bound: r.bound.name, limit: r.bound.limit } },
    },
    id: null,
  });
  res.writeHead(r.status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** An answer given from the headers (a refusal, health, metadata: small, whole) written out; the body, if any, stays unread. */
async function writeUnread(req: IncomingMessage, res: ServerResponse, response: Response): Promise<void> {
  const bytes = Buffer.from(await response.arrayBuffer());
  const out: Record<string, string> = {};
  for (const [name, value] of response.headers) out[name] = value;
  // The unread body is not waited for: the connection ends with the answer.
  if (hasBody(req)) out.connection = 'close';
  res.writeHead(response.status, { ...out, 'content-length': String(bytes.length) });
  res.end(bytes);
}

/**
 * The public server's request handler: the socket's cap and the body deadline first
 * (`InboundGuard.admit`), then the handler's `admit` on the headers alone (route, Host, Origin,
 * token: a refusal is answered and the connection closed without a byte of the body read), then
 * the body, bounded in size, time and the process's budget, then the lean path when it takes the
 * request, else the SDK's.
 */
export function gatedRequests(d: {
  handler: EndpointHandler;
  lean: LeanCalls | undefined;
  guard: InboundGuard;
  trusted: TrustedProxies;
  onError: (err: Error) => void;
}): (req: IncomingMessage, res: ServerResponse) => void {
  const serve = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const address = d.trusted.clientAddress(req);
    const verdict = await d.handler.admit(requestHead(req), address);
    // The body's deadline passed while the headers were judged: answered (408) already.
    if (res.headersSent) return;
    if (verdict instanceof Response) return writeUnread(req, res, verdict);
    let body: string | undefined;
    if (hasBody(req)) {
      const raw = await d.guard.read(req, res, MAX_BODY_BYTES);
      // Refused (answered) or the client went away.
      if (raw === undefined) return;
      body = raw.toString('utf8');
    }
    const viaSdk = (r: IncomingMessage, s: ServerResponse, b: string | undefined): void =>
      void serveWithBody(r, s, b, (request) => d.handler.serve(request, verdict), d.onError);
    if (d.lean !== undefined && body !== undefined)
      d.lean.handle(req, res, address, verdict.grant, body, viaSdk, verdict.server, verdict.cors);
    else viaSdk(req, res, body);
  };
  return (req, res) => {
    if (!d.guard.admit(req, res)) return;
    serve(req, res).catch((err: unknown) => {
      d.onError(err as Error);
      if (res.headersSent) return void res.destroy();
      res.writeHead(500, { 'content-type': 'application/json', connection: 'close' });
      res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal server error' }, id: null }));
    });
  };
}
