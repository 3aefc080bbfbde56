import { NoticeKinds, WireError, ErrorCodes, type NoticeKind } from '@mcpx/contracts';
import type { ServerCredentials } from '@mcpx/stored';
import { connectMcp, type ConnectMcpOptions, type McpConnection } from '@mcpx/mcp-client';
import { authContextOf, type EraVerdictSource } from './era-verdicts.js';

/** The connection that carries one auth context's upstream subscriptions (account, server, credentials). */
export interface WatchContext {
  key: string;
  account: string;
  server: string;
  /** Subscriptions on it (its owner counts them); closed when none is left. */
  entries: number;
  conn: Promise<McpConnection>;
}

/** An upstream subscription as opened: `live` when the server will say something, and how to end it. */
export interface OpenedWatch {
  live: boolean;
  close: () => Promise<void>;
}

export interface WatchContextOptions {
  connectTimeoutMs: number;
  fetch?: typeof fetch;
  /** The era verdicts the calls' connections learnt: a modern server is then reached with no probe. */
  verdicts?: EraVerdictSource;
}

type NoticeListener = (ctx: WatchContext, kind: NoticeKind, uri: string | undefined) => void;

/**
 * One connection per auth context for the upstream subscriptions the endpoint's clients hold
 * (./upstream-watches.ts): its own, not a run's pooled one, because it lives as long as they
 * do (a run's goes idle), and because a 2025 server's `resources/subscribe` belongs to the
 * session that sent it. A 2026-07-28 server gets one `subscriptions/listen` per subscription
 * (its filter is fixed when it opens); a 2025 server `resources/subscribe` on the session, whose
 * GET stream carries the notices. Every notice the connection hears goes to `onNotice`.
 */
export class UpstreamContexts {
  private readonly contexts = new Map<string, WatchContext>();
  private noticeListener: NoticeListener = () => {};
  private lostListener: (ctx: WatchContext) => void = () => {};

  constructor(private readonly opts: WatchContextOptions) {}

  onNotice(listener: NoticeListener): void {
    this.noticeListener = listener;
  }

  onLost(listener: (ctx: WatchContext) => void): void {
    this.lostListener = listener;
  }

  /** The context of `key`, its connection opened on first use (a failed one is forgotten). */
  context(key: string, account: string, server: string, creds: ServerCredentials): WatchContext {
    const hit = this.contexts.get(key);
    if (hit !== undefined) return hit;
    const ctx: WatchContext = {
      key,
      account,
      server,
      entries: 0,
      conn: Promise.resolve(undefined as unknown as McpConnection),
    };
    ctx.conn = this.connect(ctx, creds);
    ctx.conn.catch(() => {
      if (this.contexts.get(key) === ctx) this.contexts.delete(key);
    });
    this.contexts.set(key, ctx);
    return ctx;
  }

  private async connect(ctx: WatchContext, creds: ServerCredentials): Promise<McpConnection> {
    const heard = (kind: NoticeKind, uri?: string): void => this.noticeListener(ctx, kind, uri);
    const prior = await this.opts.verdicts
      ?.get(ctx.account, ctx.server, authContextOf(creds.url, creds.headers))
      .catch(() => undefined);
    const options: ConnectMcpOptions = {
      ...(prior !== undefined ? { prior } : {}),
      url: creds.url,
      headers: creds.headers,
      connectTimeoutMs: this.opts.connectTimeoutMs,
      ...(creds.transport ? { transport: creds.transport } : {}),
      ...(this.opts.fetch ? { fetch: this.opts.fetch } : {}),
      onToolsListChanged: () => heard(NoticeKinds.tools),
    };
    const conn = await connectMcp(options);
    conn.client.setNotificationHandler('notifications/prompts/list_changed', () => heard(NoticeKinds.prompts));
    conn.client.setNotificationHandler('notifications/resources/list_changed', () => heard(NoticeKinds.resources));
    conn.client.setNotificationHandler('notifications/resources/updated', (n) => {
      const uri = (n.params as { uri?: unknown } | undefined)?.uri;
      if (typeof uri === 'string') heard(NoticeKinds.updated, uri);
    });
    return conn;
  }

  /** The server's list changes: a listen for what it declares (2026), the session's own stream (2025). */
  async watchLists(ctx: WatchContext, ended: () => void): Promise<OpenedWatch> {
    const conn = await ctx.conn;
    const caps = conn.client.getServerCapabilities() ?? {};
    const filter = {
      ...(caps.tools?.listChanged === true ? { toolsListChanged: true } : {}),
      ...(caps.prompts?.listChanged === true ? { promptsListChanged: true } : {}),
      ...(caps.resources?.listChanged === true ? { resourcesListChanged: true } : {}),
    };
    if (Object.keys(filter).length === 0) return { live: false, close: async () => {} };
    if (conn.era !== 'modern') return { live: true, close: async () => {} };
    return await this.listen(conn, filter, ended);
  }

  /** One resource's updates; a server that declares no subscriptions is refused as it would refuse it (-32601). */
  async watchResource(ctx: WatchContext, uri: string, ended: () => void): Promise<OpenedWatch> {
    const conn = await ctx.conn;
    if (conn.client.getServerCapabilities()?.resources?.subscribe !== true) {
      throw new WireError(ErrorCodes.notFound, `the ${ctx.server} MCP server does not offer resource subscriptions`, {
        server: ctx.server,
        mcpCode: -32601,
      });
    }
    if (conn.era === 'modern') return await this.listen(conn, { resourceSubscriptions: [uri] }, ended);
    await conn.client.subscribeResource({ uri });
    return {
      live: true,
      close: async () => void (await conn.client.unsubscribeResource({ uri }).catch(() => undefined)),
    };
  }

  private async listen(
    conn: McpConnection,
    filter: Parameters<McpConnection['client']['listen']>[0],
    ended: () => void,
  ): Promise<OpenedWatch> {
    const sub = await conn.client.listen(filter);
    let closing = false;
    void sub.closed.then(() => {
      if (!closing) ended();
    });
    return {
      live: true,
      close: async () => {
        closing = true;
        await sub.close().catch(() => undefined);
      },
    };
  }

  /** Closes a context's connection once no subscription is left on it. */
  async releaseIfIdle(ctx: WatchContext): Promise<void> {
    if (ctx.entries > 0 || this.contexts.get(ctx.key) !== ctx) return;
    this.contexts.delete(ctx.key);
    const conn = await ctx.conn.catch(() => undefined);
    await conn?.close().catch(() => undefined);
  }

  /** Contexts whose connection ended under them (a 2025 session the server closed): told to `onLost`. */
  async sweepClosed(): Promise<void> {
    for (const ctx of [...this.contexts.values()]) {
      const conn = await ctx.conn.catch(() => undefined);
      if (conn?.closed === true && this.contexts.get(ctx.key) === ctx) {
        this.contexts.delete(ctx.key);
        this.lostListener(ctx);
      }
    }
  }

  async closeAll(): Promise<void> {
    const all = [...this.contexts.values()];
    this.contexts.clear();
    await Promise.all(all.map(async (ctx) => (await ctx.conn.catch(() => undefined))?.close().catch(() => undefined)));
  }
}
