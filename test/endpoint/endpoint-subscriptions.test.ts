import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startSubscribingUpstream, type SubscribingUpstream } from '../servers/subscribing-upstream.js';
import { eventually } from '../support/system.js';
import { startEndpointSystem, type EndpointSystem } from './endpoint-harness.js';

const PER_TOKEN = 6;

/** A v2 client (2026-07-28) of a face, and what reached it. */
async function modernClient(
  url: string,
  token: string,
): Promise<{ client: Client; updates: string[]; toolsChanged: () => number }> {
  const client = new Client({ name: 'subs-v2', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
  );
  const updates: string[] = [];
  let tools = 0;
  client.setNotificationHandler('notifications/resources/updated', (n) => void updates.push(n.params.uri));
  client.setNotificationHandler('notifications/tools/list_changed', () => void tools++);
  return { client, updates, toolsChanged: () => tools };
}

/** An SDK v1 client (2025-11-25) of a face, and what reached it on its GET stream. */
async function legacyClient(
  url: string,
  token: string,
): Promise<{ client: V1Client; transport: V1Transport; updates: string[]; toolsChanged: () => number }> {
  const client = new V1Client({ name: 'subs-v1', version: '1.0.0' });
  const transport = new V1Transport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } });
  await client.connect(transport);
  const updates: string[] = [];
  let tools = 0;
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updates.push(n.params.uri));
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => void tools++);
  return { client, transport, updates, toolsChanged: () => tools };
}

/** Says `uri` changed until `got` sees it (a GET stream may open just after the subscribe answers). */
async function updatedUntil(upstream: SubscribingUpstream, uri: string, got: () => boolean): Promise<void> {
  await eventually(
    async () => {
      if (got()) return true;
      upstream.update(uri);
      await new Promise((r) => setTimeout(r, 300));
      return got() ? true : undefined;
    },
    20_000,
    `an update of ${uri}`,
  );
}

/**
 * Subscriptions through the endpoint (docs/endpoint.md#subscriptions): a resource's updates and a
 * server's list changes reach the subscribed client on both faces and both eras (a 2026-07-28
 * `subscriptions/listen`, a 2025 `resources/subscribe` and GET stream), under the URI the client
 * knows; one upstream subscription however many clients, released with the last; bounded per
 * token; a flood coalesced; nothing of one token reaches another.
 */
describe('subscriptions through the endpoint faces', () => {
  let sys: EndpointSystem;
  let live: SubscribingUpstream;
  let old: SubscribingUpstream;
  let tokenA = '';
  let tokenB = '';
  let tokenOther = '';

  beforeAll(async () => {
    [sys, live, old] = await Promise.all([
      startEndpointSystem({ endpointEnv: { ENDPOINT_SUBSCRIPTIONS_PER_TOKEN: String(PER_TOKEN) } }),
      startSubscribingUpstream(),
      startSubscribingUpstream({ eras: 'legacy' }),
    ]);
    await sys.system.setServer('live', live.url);
    await sys.system.setServer('old', old.url);
    await sys.system.createAgent('watcher', ['live', 'old'], 2);
    await sys.system.createAgent('other', ['live'], 1);
    [{ token: tokenA }, { token: tokenB }, { token: tokenOther }] = await Promise.all([
      sys.token('watcher'),
      sys.token('watcher'),
      sys.token('other'),
    ]);
  }, 120_000);

  afterAll(async () => {
    await sys?.stop();
    await Promise.all([live?.close(), old?.close()]);
  });

  const face = (agent: string, server?: string): string =>
    `${sys.endpoint.url}/v1/agents/${agent}${server === undefined ? '' : `/servers/${server}`}/mcp`;

  it('brings a 2026-07-28 server’s resource updates and list changes to a listen on the per-server face', async () => {
    const a = await modernClient(face('watcher', 'live'), tokenA);
    try {
      const sub = await a.client.listen({ resourceSubscriptions: ['test://watched/1'], toolsListChanged: true });
      expect(sub.honoredFilter).toEqual({ resourceSubscriptions: ['test://watched/1'], toolsListChanged: true });
      expect(live.asked()).toContain('test://watched/1');
      live.update('test://watched/1');
      await eventually(async () => (a.updates.includes('test://watched/1') ? true : undefined), 10_000, 'the update');
      live.listsChanged();
      await eventually(async () => (a.toolsChanged() > 0 ? true : undefined), 10_000, 'the list change');
      await sub.close();
    } finally {
      await a.client.close();
    }
  });

  it('names a resource on the merged face by its wrapped URI, and leaves out of the ack what it cannot hold', async () => {
    const a = await modernClient(face('watcher'), tokenA);
    const wrapped = `mcpx://live/${encodeURIComponent('test://watched/2')}`;
    try {
      const sub = await a.client.listen({
        resourceSubscriptions: [wrapped, 'mcpx://nowhere/x%3A%2F%2Fy', 'test://watched/2'],
      });
      // An unknown server's URI and an unwrapped one name nothing this face serves.
      expect(sub.honoredFilter).toEqual({ resourceSubscriptions: [wrapped] });
      live.update('test://watched/2');
      await eventually(async () => (a.updates.includes(wrapped) ? true : undefined), 10_000, 'the wrapped update');
      expect(a.updates.every((u) => u === wrapped)).toBe(true);
      await sub.close();
    } finally {
      await a.client.close();
    }
  });

  it('brings a 2025 server’s updates to a 2025 client’s GET stream on both faces, with a session id of its own', async () => {
    const direct = await legacyClient(face('watcher', 'old'), tokenA);
    const merged = await legacyClient(face('watcher'), tokenA);
    const wrapped = `mcpx://old/${encodeURIComponent('test://watched/3')}`;
    try {
      expect(direct.transport.sessionId).toMatch(/^[0-9a-f-]{36}$/);
      await direct.client.subscribeResource({ uri: 'test://watched/3' });
      await merged.client.subscribeResource({ uri: wrapped });
      // Two clients, one upstream subscription.
      expect(old.legacySubscriptions()).toBe(1);
      await updatedUntil(old, 'test://watched/3', () => direct.updates.length > 0 && merged.updates.length > 0);
      expect(new Set(direct.updates)).toEqual(new Set(['test://watched/3']));
      expect(new Set(merged.updates)).toEqual(new Set([wrapped]));
      // The server's list changes come on the GET streams unasked, as from a 2025 server.
      old.listsChanged();
      await eventually(
        async () => (direct.toolsChanged() > 0 && merged.toolsChanged() > 0 ? true : undefined),
        10_000,
        'the list change on the GET streams',
      );
      await direct.client.unsubscribeResource({ uri: 'test://watched/3' });
      await merged.client.unsubscribeResource({ uri: wrapped });
      await eventually(
        async () => (old.legacySubscriptions() === 0 ? true : undefined),
        10_000,
        'the upstream release',
      );
      // A server without the resource is refused as unknown, naming it.
      await expect(direct.client.subscribeResource({ uri: 'javascript:alert(1)' })).rejects.toThrow(/Unknown resource/);
    } finally {
      await direct.client.close();
      await merged.client.close();
    }
  });

  it('holds one upstream subscription for many clients and releases it with the last', async () => {
    const clients = await Promise.all([tokenA, tokenA, tokenB].map((t) => modernClient(face('watcher', 'live'), t)));
    try {
      const before = live.listens();
      const subs = await Promise.all(
        clients.map((c) => c.client.listen({ resourceSubscriptions: ['test://watched/3'] })),
      );
      expect(live.listens() - before).toBe(1);
      live.update('test://watched/3');
      await eventually(
        async () => (clients.every((c) => c.updates.includes('test://watched/3')) ? true : undefined),
        10_000,
        'every client’s update',
      );
      await Promise.all(subs.map((s) => s.close()));
      await eventually(
        async () => (live.listens() === before ? true : undefined),
        15_000,
        'the upstream listen closed',
      );
    } finally {
      await Promise.all(clients.map((c) => c.client.close()));
    }
  });

  it('gives no token another token’s updates (attack: B listens and subscribes beside A)', async () => {
    const a = await modernClient(face('watcher', 'live'), tokenA);
    const b = await modernClient(face('watcher', 'live'), tokenB);
    const other = await modernClient(face('other', 'live'), tokenOther);
    const legacyB = await legacyClient(face('watcher', 'live'), tokenB);
    try {
      const subA = await a.client.listen({ resourceSubscriptions: ['test://watched/1'] });
      const subB = await b.client.listen({ resourceSubscriptions: ['test://watched/2'], toolsListChanged: true });
      const subO = await other.client.listen({ resourceSubscriptions: ['test://watched/2'] });
      // B's 2025 client on the same face: its GET stream is its own token's.
      await legacyB.client.subscribeResource({ uri: 'test://watched/2' });
      live.update('test://watched/1');
      await eventually(async () => (a.updates.length > 0 ? true : undefined), 10_000, 'A’s update');
      // A marker B subscribed to, said after A's: once B has it, A's would have come before it.
      await updatedUntil(
        live,
        'test://watched/2',
        () => b.updates.length > 0 && other.updates.length > 0 && legacyB.updates.length > 0,
      );
      expect(b.updates).not.toContain('test://watched/1');
      expect(other.updates).not.toContain('test://watched/1');
      expect(legacyB.updates).not.toContain('test://watched/1');
      expect(a.updates).not.toContain('test://watched/2');
      await Promise.all([subA.close(), subB.close(), subO.close()]);
    } finally {
      await Promise.all([a.client.close(), b.client.close(), other.client.close(), legacyB.client.close()]);
    }
  });

  it('attack: once the agent’s grant of a server is revoked, none of its notices reaches a stream still open, on any face or era', async () => {
    await sys.system.createAgent('revoked', ['live', 'old'], 2);
    const { token } = await sys.token('revoked');
    const uri = 'test://watched/3';
    const wrapped = `mcpx://live/${encodeURIComponent(uri)}`;
    const marker = `mcpx://old/${encodeURIComponent('test://watched/4')}`;
    const merged = await modernClient(face('revoked'), token);
    const own = await modernClient(face('revoked', 'live'), token);
    const legacy = await legacyClient(face('revoked'), token);
    try {
      const subMerged = await merged.client.listen({
        resourceSubscriptions: [wrapped, marker],
        toolsListChanged: true,
      });
      expect(subMerged.honoredFilter).toEqual({ resourceSubscriptions: [wrapped, marker], toolsListChanged: true });
      await own.client.listen({ resourceSubscriptions: [uri] });
      await legacy.client.subscribeResource({ uri: wrapped });
      await updatedUntil(
        live,
        uri,
        () => merged.updates.includes(wrapped) && own.updates.includes(uri) && legacy.updates.includes(wrapped),
      );
      await sys.system.api.act('UpdateAgent', { agent: 'revoked', definition: { mcpServers: ['old'] } });
      // The merged face's clients hear their tool set change: the revocation has reached the endpoint.
      await eventually(async () => (merged.toolsChanged() > 0 ? true : undefined), 10_000, 'the set change');
      const before = { merged: merged.updates.length, own: own.updates.length, legacy: legacy.updates.length };
      live.update(uri, 3);
      // The other server's update, said after: once it is in, the revoked server's would have come before it.
      await updatedUntil(old, 'test://watched/4', () => merged.updates.includes(marker));
      live.update(uri, 3);
      await updatedUntil(old, 'test://watched/4', () => merged.updates.filter((u) => u === marker).length >= 2);
      expect(merged.updates.slice(before.merged).filter((u) => u !== marker)).toEqual([]);
      expect(own.updates.slice(before.own)).toEqual([]);
      expect(legacy.updates.slice(before.legacy)).toEqual([]);
      // The revoked server's face serves this token nothing any more.
      await expect(own.client.listTools()).rejects.toThrow();
    } finally {
      await Promise.all(
        [merged.client.close(), own.client.close(), legacy.client.close()].map((p) => p.catch(() => undefined)),
      );
    }
  });

  it('coalesces a flood of 10,000 updates into a few, the last change not lost', async () => {
    const a = await modernClient(face('watcher', 'live'), tokenA);
    try {
      const sub = await a.client.listen({ resourceSubscriptions: ['test://watched/1'] });
      live.update('test://watched/1', 10_000);
      // The first passes at once, the rest as one at the end of the window.
      await eventually(async () => (a.updates.length >= 2 ? true : undefined), 10_000, 'the coalesced update');
      expect(a.updates.length).toBeLessThanOrEqual(10);
      await sub.close();
    } finally {
      await a.client.close();
    }
  });

  it('refuses subscriptions past the token’s bound whole, naming the limit, on both eras', async () => {
    // A token of its own: a 2025 client's subscriptions outlive its stream for a while.
    const { token: tokenC } = await sys.token('watcher');
    const a = await modernClient(face('watcher', 'live'), tokenC);
    const legacy = await legacyClient(face('watcher', 'live'), tokenC);
    try {
      const uris = Array.from({ length: PER_TOKEN + 1 }, (_, i) => `test://watched/x${i}`);
      const refused = await fetch(face('watcher', 'live'), {
        method: 'POST',
        headers: {
          authorization: `Bearer ${tokenC}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-method': 'subscriptions/listen',
          'mcp-protocol-version': '2026-07-28',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 7,
          method: 'subscriptions/listen',
          params: {
            notifications: { resourceSubscriptions: uris },
            _meta: {
              'io.modelcontextprotocol/protocolVersion': '2026-07-28',
              'io.modelcontextprotocol/clientCapabilities': {},
            },
          },
        }),
      });
      expect(refused.status).toBe(429);
      const body = (await refused.json()) as {
        id: number;
        error: { data: { details: { limit: string; max: number } } };
      };
      expect(body.id).toBe(7);
      expect(body.error.data.details).toMatchObject({ limit: 'subscriptions_per_token', max: PER_TOKEN });
      for (const uri of uris.slice(0, PER_TOKEN)) await legacy.client.subscribeResource({ uri });
      await expect(legacy.client.subscribeResource({ uri: uris[PER_TOKEN] as string })).rejects.toThrow(
        /subscriptions_per_token/,
      );
      // The bound is the token's: another token subscribes as before.
      const other = await modernClient(face('watcher', 'live'), tokenA);
      const sub = await other.client.listen({ resourceSubscriptions: ['test://watched/1'] });
      expect(sub.honoredFilter.resourceSubscriptions).toEqual(['test://watched/1']);
      await sub.close();
      await other.client.close();
    } finally {
      await Promise.all([a.client.close(), legacy.client.close()]);
    }
  });
});
