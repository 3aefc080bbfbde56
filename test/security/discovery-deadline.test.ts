/**
 * Attack: a remote server answers discovery slowly and at length, each answer within every
 * per-request bound, to hold its account's discovery slots. It lists a
 * hundred tools a page at a time, each page a new cursor (a cursor that repeats is caught
 * sooner), and every request waits a while before it is answered. The discovery must end at its total deadline with a status naming that bound
 * (not the page cap, not a request timeout), free its slot, and leave the registry serving.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFrontServer, type FrontServer } from '../servers/front-server.js';
import { echoTool, startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import type { ApiClient } from '../support/api-client.js';
import { RegistryHarness } from '../support/registry-harness.js';

/** The deadline here: long enough for the connect and a few pages, short against the page cap (50 pages of DELAY_MS each). */
const DEADLINE_MS = 5_000;
/** How long the front waits before passing each request on: each answer is slow, none is silent. */
const DELAY_MS = 300;
/** More pages than the page cap (50), one tool each. */
const TOOLS = Array.from({ length: 100 }, (_, i) => ({ ...echoTool(), name: `echo_${i}` }));

interface ServerView {
  name: string;
  status: { state: string; error?: string };
  tools: unknown[];
}

describe('a discovery ends at its total deadline', () => {
  let h: RegistryHarness;
  let upstream: TestMcpServer;
  let front: FrontServer;
  let fine: TestMcpServer;
  let api: ApiClient;

  beforeAll(async () => {
    [upstream, fine] = await Promise.all([
      startTestMcpServer({ tools: TOOLS, pageSize: 1 }),
      startTestMcpServer({ tools: [echoTool()] }),
    ]);
    front = await startFrontServer({ mode: 'forward', target: new URL(upstream.url).origin, delayMs: DELAY_MS });
    h = await RegistryHarness.start({
      env: { DISCOVERY_DEADLINE_MS: String(DEADLINE_MS), QUOTA_DISCOVERIES_PER_ACCOUNT: '1' },
    });
    api = h.api();
  });
  afterAll(async () => {
    await h?.stop();
    await front?.close();
    await upstream?.close();
    await fine?.close();
  });

  it('a server that pages slowly past the deadline gets a status naming the deadline and its setting; the slot is freed and the registry serves on', async () => {
    const url = `${front.origin}${new URL(upstream.url).pathname}`;
    const { server } = await api.act<{ server: ServerView }>('SetMcpServer', { name: 'slowpages', config: { url } });
    expect(server.status.state).toBe('error');
    expect(server.status.error).toBe(
      `the discovery passed its total deadline of ${DEADLINE_MS} ms (bound deadlineMs, DISCOVERY_DEADLINE_MS)`,
    );
    // It was the deadline, not another bound: the server was answering pages meanwhile, fewer than the cap.
    expect(server.status.error).not.toMatch(/maxPages|pages/);
    expect(upstream.stats.listCalls).toBeGreaterThan(0);
    expect(upstream.stats.listCalls).toBeLessThan(50);

    // The account's one discovery slot (QUOTA_DISCOVERIES_PER_ACCOUNT=1 here) is free again: its next server is discovered.
    const next = await api.act<{ server: ServerView }>('SetMcpServer', { name: 'fine', config: { url: fine.url } });
    expect(next.server.status.state).toBe('ok');
    expect(next.server.tools).toHaveLength(1);
    expect((await fetch(new URL('/healthz', h.apiUrl))).status).toBe(200);

    // Counted by its code, so an operator sees deadlines apart from other failures.
    const metrics = await (await fetch(new URL('/metrics', h.internalUrl))).text();
    expect(metrics).toMatch(/mcpx_discovery_total\{[^}]*code="deadline"[^}]*\} 1/);
  }, 60_000);
});
