import { randomUUID } from 'node:crypto';
import type { McpHttpHandler } from '@modelcontextprotocol/server';
import type { TokenGrant } from './agent-tokens.js';
import { openListen } from './listen-holds.js';
import { SubscriptionRefusal, type Subscriptions } from './subscriptions.js';

/** A POST's body read once: the request to hand on, and its JSON (undefined when it is none). */
export interface ReadBody {
  request: Request;
  parsed: unknown;
}

/** Reads a POST's body (already bounded by the inbound guard) and gives a request that still carries it. */
export async function readBody(request: Request): Promise<ReadBody> {
  const text = await request.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return {
    request: new Request(request.url, {
      method: request.method,
      headers: request.headers,
      body: text,
      signal: request.signal,
    }),
    parsed,
  };
}

/**
 * Whether a POST may be a 2025 client's `initialize` (no session and no protocol version header
 * yet): only those are read here, to give the session an id.
 */
export function mayInitialize(request: Request): boolean {
  return (
    request.method === 'POST' &&
    !request.headers.has('mcp-session-id') &&
    !request.headers.has('mcp-protocol-version') &&
    !request.headers.has('mcp-method')
  );
}

const isInitialize = (body: unknown): boolean =>
  body !== null && typeof body === 'object' && (body as { method?: unknown }).method === 'initialize';

/**
 * A 2025 `initialize` answered with an `Mcp-Session-Id`, as a 2025 server gives one: the serving
 * stays stateless (any instance serves any request of it), the id only tells a client's GET
 * streams and subscriptions apart from its token's other clients' (./legacy-subscriptions.ts).
 */
export function withSession(body: unknown, res: Response): Response {
  if (!isInitialize(body) || !res.ok) return res;
  const headers = new Headers(res.headers);
  headers.set('mcp-session-id', randomUUID());
  return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
}

/** A listen refused past a subscription bound: the JSON-RPC error of its request, 429. */
function refusedListen(body: unknown, r: SubscriptionRefusal): Response {
  const id = (body as { id?: unknown }).id;
  return new Response(
    JSON.stringify({
      jsonrpc: '2.0',
      id: typeof id === 'string' || typeof id === 'number' ? id : null,
      error: {
        code: -32000,
        message: r.message,
        data: {
          code: 'rate_limited',
          details: { field: 'params.notifications.resourceSubscriptions', limit: r.limit, max: r.max },
        },
      },
    }),
    { status: 429, headers: { 'content-type': 'application/json' } },
  );
}

/**
 * A 2026-07-28 `subscriptions/listen` of a face, its upstream subscriptions held first
 * (./listen-holds.ts): the body to hand to the SDK and the release for the stream's end, or the
 * refusal to answer. A body that is not a listen goes to the SDK as it is (it answers it).
 */
export async function prepareListen(
  subs: Subscriptions,
  grant: TokenGrant,
  face: string | undefined,
  handler: McpHttpHandler,
  body: unknown,
): Promise<{ body: unknown; release: () => void } | Response> {
  try {
    return (await openListen(subs, grant, face, handler, body)) ?? { body, release: () => {} };
  } catch (err) {
    if (err instanceof SubscriptionRefusal) return refusedListen(body, err);
    throw err;
  }
}
