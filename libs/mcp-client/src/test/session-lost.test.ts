import { afterEach, describe, expect, it } from 'vitest';
import { freshSocketRequest } from './fresh-socket.js';
import { startEverythingServer, startTestMcpServer, type EverythingServer } from '../../../../test/servers/index.js';
import { startEverythingServerAt } from '../../../../test/servers/everything.js';
import {
  connectMcp,
  isInputRequired,
  McpClientError,
  type EraVerdict,
  type McpCallResult,
  type McpConnection,
} from '../index.js';

/**
 * The retry decisions a real legacy server forces, taken from status and JSON-RPC code alone:
 * server-everything (built on SDK v1) answers a request on a session it does not know, or one
 * without a session, with HTTP 400 and a -32000 error echoing our id ("Bad Request: No valid
 * session ID provided"). After its restart the session is gone: the call is refused unrun
 * (`session_expired`, retryable once on a fresh session). A modern verdict cached for it is
 * stale: its first request is refused (HTTP 400, -32000) and re-run once on a fresh probe, on the
 * call path (the library's own request) and on the SDK's path (a listing).
 */

const opened: McpConnection[] = [];
const servers: Array<{ close(): Promise<void> }> = [];

afterEach(async () => {
  await Promise.all(opened.splice(0).map(async (c) => await c.close()));
  await Promise.all(servers.splice(0).map(async (s) => await s.close()));
});

async function everything(): Promise<EverythingServer> {
  const s = await startEverythingServer('streamableHttp');
  servers.push(s);
  return s;
}

async function connect(opts: Parameters<typeof connectMcp>[0]): Promise<McpConnection> {
  const c = await connectMcp({ connectTimeoutMs: 15_000, request: freshSocketRequest, ...opts });
  opened.push(c);
  return c;
}

function text(result: McpCallResult): string {
  if (isInputRequired(result)) throw new Error('expected a complete result');
  return result.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
}

async function modernVerdict(): Promise<EraVerdict> {
  const modern = await startTestMcpServer({ era: 'modern' });
  servers.push(modern);
  const c = await connect({ url: modern.url });
  expect(c.era).toBe('modern');
  return c.verdict;
}

describe('server-everything restarted: its sessions are gone', () => {
  it('a call on the old session is refused unrun (session_expired, retryable once); a fresh session answers', async () => {
    const first = await everything();
    const c = await connect({ url: first.url });
    expect(c.era).toBe('legacy');
    expect(text(await c.callTool({ name: 'echo', arguments: { message: 'one' } }))).toContain('one');

    await first.close();
    const second = await startEverythingServerAt('streamableHttp', first.port);
    servers.push(second);

    const expired: unknown = await c.callTool({ name: 'echo', arguments: { message: 'two' } }).catch((e: unknown) => e);
    expect(expired).toBeInstanceOf(McpClientError);
    expect(expired).toMatchObject({ code: 'session_expired', retryable: true, ran: 'none', status: 400 });

    // What the retry does: a fresh connection (a new session) to the same server.
    const fresh = await connect({ url: second.url });
    expect(text(await fresh.callTool({ name: 'echo', arguments: { message: 'three' } }))).toContain('three');
  });
});

describe('a modern verdict cached for server-everything is stale', () => {
  it('the call path: the refused call is re-run once on a fresh probe, as legacy', async () => {
    const prior = await modernVerdict();
    const s = await everything();
    const c = await connect({ url: s.url, prior });
    expect(c).toMatchObject({ era: 'modern', reprobed: false });
    expect(text(await c.callTool({ name: 'echo', arguments: { message: 'again' } }))).toContain('again');
    expect(c).toMatchObject({ era: 'legacy', reprobed: true });
  });

  it('the SDK path (a listing): the SDK’s typed HTTP 400 re-probes once, as legacy', async () => {
    const prior = await modernVerdict();
    const s = await everything();
    const c = await connect({ url: s.url, prior });
    const tools = await c.listTools();
    expect(tools.map((t) => t.name)).toContain('echo');
    expect(c).toMatchObject({ era: 'legacy', reprobed: true });
  });
});
