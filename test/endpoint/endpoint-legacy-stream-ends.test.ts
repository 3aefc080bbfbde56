import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { echoTool, startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { eventually } from '../support/system.js';
import { startEndpointSystem, type EndpointSystem } from './endpoint-harness.js';

/** A raw 2025-11-25 GET stream of a face: what it has said so far, and whether it has ended. */
interface OpenStream {
  text: () => string;
  ended: () => boolean;
  close: () => void;
}

async function openGetStream(url: string, token: string): Promise<OpenStream> {
  const abort = new AbortController();
  const res = await fetch(url, {
    headers: {
      authorization: `Bearer ${token}`,
      accept: 'text/event-stream',
      'mcp-protocol-version': '2025-11-25',
    },
    signal: abort.signal,
  });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
  let text = '';
  let ended = false;
  void (async () => {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>)
        text += decoder.decode(chunk, { stream: true });
    } catch {
      // aborted by close()
    }
    ended = true;
  })();
  await eventually(async () => (text.includes(': open') ? true : undefined), 10_000, 'the stream open');
  return { text: () => text, ended: () => ended, close: () => abort.abort() };
}

/**
 * A 2025 client's GET stream on a per-server face ends when that face stops serving the token:
 * the agent's grant of the server revoked (as the face's `subscriptions/listen` streams end with
 * its handler), or the token revoked. It does not stay open and silent forever; the merged
 * face's stream of the same agent stays open and hears the set change.
 */
describe('a 2025 GET stream on a per-server face ends with its grant or token', () => {
  let sys: EndpointSystem;
  let upstream: TestMcpServer;

  beforeAll(async () => {
    [sys, upstream] = await Promise.all([startEndpointSystem(), startTestMcpServer({ tools: [echoTool()] })]);
    await sys.system.setServer('kept', upstream.url);
    await sys.system.setServer('lost', upstream.url);
  }, 120_000);

  afterAll(async () => {
    await sys?.stop();
    await upstream?.close();
  });

  const face = (agent: string, server?: string): string =>
    `${sys.endpoint.url}/v1/agents/${agent}${server === undefined ? '' : `/servers/${server}`}/mcp`;

  it('attack: the grant of the server revoked while the stream is open ends it, as it ends a listen on that face', async () => {
    await sys.system.createAgent('granted', ['kept', 'lost'], 2);
    const { token } = await sys.token('granted');
    const own = await openGetStream(face('granted', 'lost'), token);
    const other = await openGetStream(face('granted', 'kept'), token);
    const merged = await openGetStream(face('granted'), token);
    const modern = new Client({ name: 'ends-v2', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await modern.connect(
      new StreamableHTTPClientTransport(new URL(face('granted', 'lost')), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    try {
      const listen = await modern.listen({ toolsListChanged: true });
      expect(listen.honoredFilter).toEqual({ toolsListChanged: true });
      await sys.system.api.act('UpdateAgent', { agent: 'granted', definition: { mcpServers: ['kept'] } });
      // The merged face hears its set change: the revocation has reached the endpoint.
      await eventually(
        async () => (merged.text().includes('notifications/tools/list_changed') ? true : undefined),
        10_000,
        'the set change on the merged face',
      );
      await eventually(async () => (own.ended() ? true : undefined), 10_000, 'the revoked face’s GET stream to end');
      // Its last word says why (a list change before the revocation may have come first).
      expect(own.text().trimEnd().endsWith(': server not granted')).toBe(true);
      // The face of the server still granted and the merged face stay open.
      expect(other.ended()).toBe(false);
      expect(merged.ended()).toBe(false);
      // And the revoked face refuses a new GET stream.
      const again = await fetch(face('granted', 'lost'), {
        headers: {
          authorization: `Bearer ${token}`,
          accept: 'text/event-stream',
          'mcp-protocol-version': '2025-11-25',
        },
      });
      expect(again.status).not.toBe(200);
      await again.body?.cancel();
    } finally {
      own.close();
      other.close();
      merged.close();
      await modern.close().catch(() => undefined);
    }
  });

  it('attack: the token revoked while its stream on a per-server face is open ends it', async () => {
    await sys.system.createAgent('tokened', ['kept'], 1);
    const { token, id } = await sys.token('tokened');
    const { token: sibling } = await sys.token('tokened');
    const own = await openGetStream(face('tokened', 'kept'), token);
    const beside = await openGetStream(face('tokened', 'kept'), sibling);
    try {
      expect((await sys.system.api.act<{ revoked: boolean }>('RevokeAgentToken', { id })).revoked).toBe(true);
      await eventually(async () => (own.ended() ? true : undefined), 10_000, 'the revoked token’s stream to end');
      expect(own.text().trimEnd().endsWith(': token revoked')).toBe(true);
      // Another token of the same agent keeps its stream.
      expect(beside.ended()).toBe(false);
    } finally {
      own.close();
      beside.close();
    }
  });
});
