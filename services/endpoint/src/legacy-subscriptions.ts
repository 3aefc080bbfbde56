import { ErrorCodes, NoticeKinds, WireError } from '@mcpx/contracts';
import { ProtocolError, ProtocolErrorCode, type Server } from '@modelcontextprotocol/server';
import type { TokenGrant } from './agent-tokens.js';
import { wrapUri } from './faced-names.js';
import { LIST_CHANGED, SubscriptionRefusal, type FacedResource, type Subscriptions } from './subscriptions.js';
import type { HoldTarget } from './upstream-holds.js';

/** A 2025 client's subscriptions outlive its GET stream by this much (a reconnect keeps them). */
export const LEGACY_IDLE_MS = 5 * 60_000;
const SWEEP_MS = 30_000;

/** A JSON-RPC notification as a GET stream sends it. */
export type StreamMessage = { method: string; params?: Record<string, unknown> };

interface Session {
  grant: TokenGrant;
  face: string | undefined;
  /** The resources subscribed, by the URI the client knows. */
  resources: Map<string, { resource: FacedResource; target: HoldTarget }>;
  streams: Set<(m: StreamMessage) => void>;
  /** The list-change holds of its servers, held while a stream is open. */
  lists: HoldTarget[];
  sinks: Map<string, () => void>;
  idleSince: number;
}

/** A subscription refused or failed, as the MCP error a 2025 client expects. */
function protocolErrorOf(err: unknown, uri: string): ProtocolError {
  if (err instanceof ProtocolError) return err;
  if (err instanceof SubscriptionRefusal)
    return new ProtocolError(-32000, err.message, {
      code: ErrorCodes.rateLimited,
      details: { field: 'uri', limit: err.limit, max: err.max },
    });
  const wire = err instanceof WireError ? err : new WireError(ErrorCodes.internal, 'the subscription failed');
  const mcpCode = (wire.details as { mcpCode?: unknown }).mcpCode;
  const code =
    typeof mcpCode === 'number' && Number.isInteger(mcpCode) && mcpCode < 0
      ? mcpCode
      : wire.code === ErrorCodes.notGranted || wire.code === ErrorCodes.notFound
        ? ProtocolErrorCode.InvalidParams
        : ProtocolErrorCode.InternalError;
  return new ProtocolError(code, wire.message, { code: wire.code, details: wire.details, uri: uri.slice(0, 2_048) });
}

/**
 * The 2025 face's `resources/subscribe` and `resources/unsubscribe` (docs/endpoint.md#subscriptions):
 * the stateless 2025 serving has no session of its own, so a client's subscriptions are kept per
 * token, face and `Mcp-Session-Id` (the endpoint issues one at `initialize`; a client that sends
 * none shares the token's), and its updates go to that client's GET streams only — never to
 * another token's, whatever session id it claims. Kept on the instance that took them while a
 * GET stream is open, and {@link LEGACY_IDLE_MS} after the last one closed.
 */
/** The session a request names (`Mcp-Session-Id`), or '' for none or one that cannot be an id. */
export function sessionOf(header: string | null | undefined): string {
  return header !== null && header !== undefined && /^[\x21-\x7e]{1,128}$/.test(header) ? header : '';
}

export class LegacySubscriptions {
  private readonly sessions = new Map<string, Session>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly subs: Subscriptions) {
    this.sweeper = setInterval(() => this.sweep(), SWEEP_MS);
    this.sweeper.unref();
  }

  close(): void {
    clearInterval(this.sweeper);
    for (const key of [...this.sessions.keys()]) this.drop(key);
  }

  private keyOf(grant: TokenGrant, face: string | undefined, id: string): string {
    return `${grant.id}\u0000${face ?? ''}\u0000${id}`;
  }

  private session(grant: TokenGrant, face: string | undefined, id: string): Session {
    const key = this.keyOf(grant, face, id);
    let s = this.sessions.get(key);
    if (s === undefined)
      this.sessions.set(
        key,
        (s = {
          grant,
          face,
          resources: new Map(),
          streams: new Set(),
          lists: [],
          sinks: new Map(),
          idleSince: Date.now(),
        }),
      );
    return s;
  }

  /** `resources/subscribe`: held upstream before it answers (an update right after is not lost). */
  async subscribe(grant: TokenGrant, face: string | undefined, id: string, uri: string): Promise<void> {
    const resource = await this.subs.resolve(grant, face, uri);
    if (resource === undefined)
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown resource: ${uri.slice(0, 256)}`, {
        uri: uri.slice(0, 2_048),
      });
    if (this.sessions.get(this.keyOf(grant, face, id))?.resources.has(resource.asClient) === true) return;
    try {
      this.subs.take(grant, 1);
    } catch (err) {
      throw protocolErrorOf(err, uri);
    }
    const target = this.subs.resourceTarget(grant, resource);
    try {
      await this.subs.holds.hold(target);
    } catch (err) {
      this.subs.give(grant, 1);
      throw protocolErrorOf(err, uri);
    }
    // The session as it is now (a stream's end may have dropped an empty one meanwhile).
    const s = this.session(grant, face, id);
    if (s.resources.has(resource.asClient)) {
      // Subscribed twice at once: the second hold is not needed.
      this.subs.holds.release(target);
      this.subs.give(grant, 1);
      return;
    }
    s.resources.set(resource.asClient, { resource, target });
    this.sink(s, resource.server);
  }

  /** `resources/unsubscribe`: a URI not subscribed is no error (as servers answer it). */
  async unsubscribe(grant: TokenGrant, face: string | undefined, id: string, uri: string): Promise<void> {
    const s = this.sessions.get(this.keyOf(grant, face, id));
    if (s === undefined) return;
    // The merged face's URI as it was kept (its canonical wrapping), whatever encoding the client used.
    const key = (await this.subs.resolve(grant, face, uri))?.asClient ?? uri;
    const hit = s.resources.get(key);
    if (hit === undefined) return;
    s.resources.delete(key);
    this.subs.holds.release(hit.target);
    this.subs.give(grant, 1);
  }

  /**
   * A GET stream of the client: its subscriptions' updates and its face's servers' list changes
   * go to `send` until the returned detach.
   */
  stream(grant: TokenGrant, face: string | undefined, id: string, send: (m: StreamMessage) => void): () => void {
    const s = this.session(grant, face, id);
    s.streams.add(send);
    if (s.streams.size === 1) void this.holdLists(s);
    let open = true;
    return () => {
      if (!open) return;
      open = false;
      s.streams.delete(send);
      if (s.streams.size > 0) return;
      s.idleSince = Date.now();
      for (const t of s.lists.splice(0)) this.subs.holds.release(t);
      // Nothing subscribed: nothing to keep (a client cycling session ids leaves no trail).
      if (s.resources.size === 0) this.drop(this.keyOf(grant, face, id));
    };
  }

  private async holdLists(s: Session): Promise<void> {
    for (const server of await this.subs.servers(s.grant, s.face)) {
      const target = this.subs.listsTarget(s.grant, server);
      try {
        await this.subs.holds.hold(target);
      } catch {
        continue;
      }
      // The stream closed meanwhile: not needed any more.
      if (s.streams.size === 0) {
        this.subs.holds.release(target);
        continue;
      }
      s.lists.push(target);
      this.sink(s, server);
    }
  }

  private sink(s: Session, server: string): void {
    if (s.sinks.has(server)) return;
    const detach = this.subs.attachGranted(s.grant.account, s.grant.agent, server, (n) => {
      if (n.kind !== NoticeKinds.updated) {
        for (const send of s.streams) send({ method: LIST_CHANGED[n.kind] });
        return;
      }
      const asClient = s.face === undefined ? wrapUri(server, n.uri ?? '') : (n.uri ?? '');
      if (!s.resources.has(asClient)) return;
      for (const send of s.streams) send({ method: 'notifications/resources/updated', params: { uri: asClient } });
    });
    s.sinks.set(server, detach);
  }

  private sweep(now = Date.now()): void {
    for (const [key, s] of this.sessions)
      if (s.streams.size === 0 && now - s.idleSince > LEGACY_IDLE_MS) this.drop(key);
  }

  private drop(key: string): void {
    const s = this.sessions.get(key);
    if (s === undefined) return;
    this.sessions.delete(key);
    for (const { target } of s.resources.values()) this.subs.holds.release(target);
    this.subs.give(s.grant, s.resources.size);
    for (const t of s.lists.splice(0)) this.subs.holds.release(t);
    for (const detach of s.sinks.values()) detach();
  }
}

/**
 * Registers a 2025 face's `resources/subscribe` and `resources/unsubscribe` on its per-request
 * `server` (the 2026-07-28 serving answers them as removed methods: a listen names its resources).
 */
export function registerSubscribe(
  server: Server,
  grant: TokenGrant,
  face: string | undefined,
  legacy: LegacySubscriptions,
  counted: (method: string, outcome: string) => void,
): void {
  const sessionIn = (ctx: { http?: { req?: { headers: Headers } } }): string =>
    sessionOf(ctx.http?.req?.headers.get('mcp-session-id'));
  server.setRequestHandler('resources/subscribe', async (request, ctx) => {
    try {
      await legacy.subscribe(grant, face, sessionIn(ctx), request.params.uri);
    } catch (err) {
      counted('resources/subscribe', err instanceof ProtocolError ? String(err.code) : 'error');
      throw err;
    }
    counted('resources/subscribe', 'ok');
    return {};
  });
  server.setRequestHandler('resources/unsubscribe', async (request, ctx) => {
    await legacy.unsubscribe(grant, face, sessionIn(ctx), request.params.uri);
    counted('resources/unsubscribe', 'ok');
    return {};
  });
}
