import { NoticeKinds, WatchKinds, WireError, resourceUriFault, type UpstreamNotice } from '@mcpx/contracts';
import type { McpHttpHandler } from '@modelcontextprotocol/server';
import type { TokenGrant } from './agent-tokens.js';
import { unwrapUri, wrapUri } from './faced-names.js';
import type { ToolSets } from './tool-sets.js';
import type { HoldTarget, UpstreamHolds } from './upstream-holds.js';

/** The bounds on resource subscriptions held on one instance (`EndpointConfig.subscriptions`). */
export interface SubscriptionLimits {
  perToken: number;
  perAccount: number;
}

/** A subscription past a bound: refused whole, naming the limit. */
export class SubscriptionRefusal extends Error {
  constructor(
    readonly limit: 'subscriptions_per_token' | 'subscriptions_per_account',
    readonly max: number,
  ) {
    super(
      `Too many subscriptions: ${limit === 'subscriptions_per_token' ? 'this token' : "this token's account"} holds ${max} resource subscriptions (${limit}); unsubscribe from one first`,
    );
  }
}

/** A resource as a face's client names it, and as its server does. */
export interface FacedResource {
  server: string;
  /** The server's own URI. */
  uri: string;
  /** The URI the client knows: the same on a per-server face, wrapped on the merged face. */
  asClient: string;
}

/** The list-changed notification of a notice kind (a resource update is not one). */
export const LIST_CHANGED: Record<Exclude<UpstreamNotice['kind'], 'updated'>, string> = {
  [NoticeKinds.tools]: 'notifications/tools/list_changed',
  [NoticeKinds.prompts]: 'notifications/prompts/list_changed',
  [NoticeKinds.resources]: 'notifications/resources/list_changed',
};

function bump(counts: Map<string, number>, key: string, by: number): void {
  const n = (counts.get(key) ?? 0) + by;
  if (n <= 0) counts.delete(key);
  else counts.set(key, n);
}

/**
 * The subscriptions of one endpoint instance's clients (docs/endpoint.md#subscriptions), over the
 * shared upstream holds ({@link UpstreamHolds}): what a face's client may subscribe to (its grant,
 * its URIs mapped back), how many it may hold (per token and per account, counted together
 * across 2025 subscriptions and 2026 listens), and where the notices go: a 2026 face handler's
 * listen streams (the SDK's router filters each stream by what it asked), or one 2025 client's
 * GET streams (./legacy-subscriptions.ts).
 */
export class Subscriptions {
  private readonly byToken = new Map<string, number>();
  private readonly byAccount = new Map<string, number>();
  /** The sinks feeding face handlers' listen streams: one per handler and server, counted. */
  private readonly faceSinks = new WeakMap<McpHttpHandler, Map<string, { refs: number; detach: () => void }>>();

  constructor(
    readonly holds: UpstreamHolds,
    private readonly toolSets: ToolSets,
    private readonly limits: SubscriptionLimits,
  ) {}

  /** The servers a face's notices come from: its own, or every server the agent is granted now. */
  async servers(grant: TokenGrant, face: string | undefined): Promise<string[]> {
    const set = await this.toolSets.get(grant.account, grant.agent);
    if (set === null) return [];
    if (face !== undefined) return set.granted.has(face) ? [face] : [];
    return [...set.granted].sort();
  }

  /** A client's URI on a face as its server's, or undefined when it names none the agent is granted. */
  async resolve(grant: TokenGrant, face: string | undefined, uri: string): Promise<FacedResource | undefined> {
    const back = face === undefined ? unwrapUri(uri) : { server: face, uri };
    if (back === undefined || resourceUriFault(back.uri) !== undefined) return undefined;
    if (!(await this.servers(grant, face)).includes(back.server)) return undefined;
    return {
      server: back.server,
      uri: back.uri,
      asClient: face === undefined ? wrapUri(back.server, back.uri) : back.uri,
    };
  }

  /** Counts `n` more subscriptions of the token, or refuses them all when a bound would be passed. */
  take(grant: TokenGrant, n: number): void {
    if (n === 0) return;
    if ((this.byToken.get(grant.id) ?? 0) + n > this.limits.perToken)
      throw new SubscriptionRefusal('subscriptions_per_token', this.limits.perToken);
    if ((this.byAccount.get(grant.account) ?? 0) + n > this.limits.perAccount)
      throw new SubscriptionRefusal('subscriptions_per_account', this.limits.perAccount);
    bump(this.byToken, grant.id, n);
    bump(this.byAccount, grant.account, n);
  }

  give(grant: TokenGrant, n: number): void {
    bump(this.byToken, grant.id, -n);
    bump(this.byAccount, grant.account, -n);
  }

  /** The upstream hold of a resource for `grant`'s agent. */
  resourceTarget(grant: TokenGrant, r: FacedResource): HoldTarget {
    return { account: grant.account, agent: grant.agent, server: r.server, kind: WatchKinds.resource, uri: r.uri };
  }

  listsTarget(grant: TokenGrant, server: string): HoldTarget {
    return { account: grant.account, agent: grant.agent, server, kind: WatchKinds.lists };
  }

  /**
   * Attaches `sink` to `server`'s notices for `agent`'s clients: each one delivered only while the
   * agent is granted the server (read as the face reads it), so once a grant is revoked none of
   * that server's notices reaches a stream still open (docs/endpoint.md#subscriptions).
   */
  attachGranted(account: string, agent: string, server: string, sink: (n: UpstreamNotice) => void): () => void {
    return this.holds.attach(account, server, (n) => {
      this.toolSets.get(account, agent).then(
        (set) => {
          if (set !== null && set.granted.has(server)) sink(n);
        },
        () => undefined,
      );
    });
  }

  /**
   * Feeds `handler`'s listen streams with `server`'s notices while held (the returned detach):
   * list changes as they are, an update under the URI the face's clients know.
   */
  feedHandler(
    handler: McpHttpHandler,
    account: string,
    agent: string,
    face: string | undefined,
    server: string,
  ): () => void {
    let sinks = this.faceSinks.get(handler);
    if (sinks === undefined) this.faceSinks.set(handler, (sinks = new Map()));
    const own = sinks;
    let sink = own.get(server);
    if (sink === undefined) {
      const detach = this.attachGranted(account, agent, server, (n) => {
        if (n.kind === NoticeKinds.tools) handler.notify.toolsChanged();
        else if (n.kind === NoticeKinds.prompts) handler.notify.promptsChanged();
        else if (n.kind === NoticeKinds.resources) handler.notify.resourcesChanged();
        else if (n.uri !== undefined)
          handler.notify.resourceUpdated(face === undefined ? wrapUri(server, n.uri) : n.uri);
      });
      sink = { refs: 0, detach };
      own.set(server, sink);
    }
    sink.refs++;
    const held = sink;
    let fed = true;
    return () => {
      if (!fed) return;
      fed = false;
      if (--held.refs > 0) return;
      held.detach();
      if (own.get(server) === held) own.delete(server);
    };
  }
}

/** A hold that could not be made: dropped from what is honoured, with why (a typed code). */
export function holdFailure(err: unknown): string {
  return err instanceof WireError ? err.code : 'error';
}
