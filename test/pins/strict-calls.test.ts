import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProxy, type RunningProxy } from '@mcpx/proxy';
import { startTestMcpServer, type TestMcpServer, type TestMcpServerOptions } from '../servers/index.js';
import { listenOnLoopback } from '../servers/loopback.js';
import { shiftingTools, ToolShifts } from '../servers/shifting-tools.js';
import type { ApiClient } from '../support/api-client.js';
import { RegistryHarness, settledToolsChanged, testTelemetry } from '../support/registry-harness.js';
import { eventually } from '../support/system.js';

/** How long a discovery's hold, a projection or a listing may take on a busy machine (a wait, not a measure). */
const HELD_WAIT_MS = 45_000;

type Tools = Record<string, string>;
interface Change {
  tool: string;
  cid: string;
  documentCid?: string;
  status: string;
  withheld: boolean;
}

/**
 * Strict pinning on the call path, against real servers on loopback that change a tool between
 * two calls with no refresh in between: the proxy compares the contract the server lists on the
 * call's connection with the accepted one before the call goes out. The registry, the projector
 * and a proxy in this process, real Postgres, NATS and Redis.
 */
describe('strict pinning: a call never runs against a contract nobody accepted', () => {
  let h: RegistryHarness;
  const closers: Array<() => Promise<void>> = [];
  beforeAll(async () => {
    h = await RegistryHarness.start({ proxy: true });
  });
  afterAll(async () => {
    await h?.stop();
    for (const close of closers) await close().catch(() => undefined);
  });

  const start = async (opts: TestMcpServerOptions = {}): Promise<TestMcpServer> => {
    const s = await startTestMcpServer({ era: 'modern', tools: shiftingTools(), ...opts });
    closers.push(() => s.close());
    return s;
  };
  const agentTools = async (api: ApiClient, agent: string): Promise<Tools> => {
    const r = await api.act('ListAgentTools', { agent });
    return Object.fromEntries((r.tools as Array<{ name: string; cid: string }>).map((t) => [t.name, t.cid]));
  };
  const changes = async (api: ApiClient): Promise<Change[]> => (await api.act('ListToolChanges', {})).changes;
  /** An account with `mail` at `url` pinned `pin` and an agent granted it, its two tools projected. */
  const account = async (url: string, pin: 'strict' | 'review' | 'off') => {
    const api = h.api();
    await api.act('SetMcpServer', { name: 'mail', config: { url, pin } });
    const { agent } = await api.act('CreateAgent', { name: 'bot', definition: { mcpServers: ['mail'] } });
    const before = await eventually(async () => {
      const t = await agentTools(api, agent.id);
      return Object.keys(t).length === 2 ? t : undefined;
    }, HELD_WAIT_MS);
    const send = (run?: string) =>
      api
        .act('InvokeTool', {
          agent: agent.id,
          tool: 'mail__send_email',
          arguments: { to: 'a@b.c' },
          ...(run ? { run } : {}),
        })
        .catch((e: unknown) => e as { code: string; details: Record<string, unknown> });
    return { api, agent: agent.id as string, before, send };
  };

  it('modern server, no cache hint: a changed description between two calls refuses the second with held_for_review, the server not called; the change is held for review with no refresh', async () => {
    const remote = await start();
    const { api, agent, before, send } = await account(remote.url, 'strict');
    expect(await send()).toMatchObject({ result: { text: 'sent to a@b.c' } });
    const calls = remote.stats.calls;
    remote.setTools(ToolShifts.description());
    const refused = await send();
    expect(refused).toMatchObject({ code: 'held_for_review', details: { server: 'mail', tool: 'mail__send_email' } });
    expect(remote.stats.calls).toBe(calls);
    // The proxy's quiet discovery reported the list; the registry listed the server itself and held it.
    const held = await eventually(
      async () => {
        const c = await changes(api);
        return c.length > 0 ? c : undefined;
      },
      HELD_WAIT_MS,
      'the change to be held',
    );
    expect(held).toEqual([
      expect.objectContaining({ tool: 'send_email', status: 'pending', withheld: true, cid: refused.details.cid }),
    ]);
    await eventually(
      async () => ((await agentTools(api, agent))['mail__send_email'] === undefined ? true : undefined),
      HELD_WAIT_MS,
      'the tool to be withheld',
    );
    expect(await send()).toMatchObject({ code: 'held_for_review', details: { cid: refused.details.cid } });
    expect(remote.stats.calls).toBe(calls);
    // The other tool's contract did not change: it still runs.
    expect((await agentTools(api, agent))['mail__lookup']).toBe(before['mail__lookup']);
    expect(await api.act('InvokeTool', { agent, tool: 'mail__lookup', arguments: { q: 'x' } })).toMatchObject({
      result: { text: 'found x' },
    });
  });

  it('accepting the withheld incompatible change re-projects exactly that CID with one agent-tools-changed, and the call runs against it', async () => {
    const remote = await start();
    const { api, agent, before, send } = await account(remote.url, 'strict');
    expect(await send()).toMatchObject({ result: { text: 'sent to a@b.c' } });
    remote.setTools(ToolShifts.schema());
    expect(await send()).toMatchObject({ code: 'held_for_review' });
    const [change] = await eventually(
      async () => {
        const c = await changes(api);
        return c.length > 0 ? c : undefined;
      },
      HELD_WAIT_MS,
      'the change to be held',
    );
    await eventually(
      async () => ((await agentTools(api, agent))['mail__send_email'] === undefined ? true : undefined),
      HELD_WAIT_MS,
      'the tool to be withheld',
    );
    const captured = await h.capture(`agents.tools.changed.${api.principal}.${agent}`);
    await api.act('AcceptToolChange', { server: 'mail', tool: 'send_email', cid: change!.cid });
    const after = await eventually(
      async () => {
        const t = await agentTools(api, agent);
        return t['mail__send_email'] !== undefined ? t : undefined;
      },
      HELD_WAIT_MS,
      'the accepted tool to be projected',
    );
    expect(after).toEqual({ mail__lookup: before['mail__lookup'], mail__send_email: change!.documentCid });
    const events = await settledToolsChanged(captured);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ added: { mail__send_email: change!.documentCid }, changed: {}, removed: [] });
    // The new contract is the accepted one now: the call (with the now required bcc) runs.
    const calls = remote.stats.calls;
    expect(
      await api.act('InvokeTool', { agent, tool: 'mail__send_email', arguments: { to: 'a@b.c', bcc: 'c@d.e' } }),
    ).toMatchObject({ result: { text: 'sent to a@b.c' } });
    expect(remote.stats.calls).toBe(calls + 1);
  });

  it("legacy server: the session's tools/list_changed makes the connection's listing stale; the next call on the run is refused, the server not called", async () => {
    const remote = await start({ era: 'legacy' });
    const front = await forwardingFront(remote.url);
    closers.push(() => front.close());
    const { send } = await account(front.url, 'strict');
    const run = `strict-${Date.now()}`;
    expect(await send(run)).toMatchObject({ result: { text: 'sent to a@b.c' } });
    // The proxy's session: the one the call ran on (the registry lists on sessions of its own).
    const session = () => remote.stats.sessions().find((s) => s.calls > 0);
    // A 2025 server sends list_changed only on a session's GET stream, which the proxy's client
    // opens in the background after the handshake: the change below must find it open.
    await eventually(
      async () => (session()?.streamOpen === true ? true : undefined),
      HELD_WAIT_MS,
      "the proxy's session stream to open",
    );
    // The proxy reports the new list and the registry lists the server itself and withholds the
    // tool: a call after that is refused for the withheld tool, not by the proxy's check. No new
    // session opens until the call is checked, so the registry's listing waits.
    front.holdHandshakes = true;
    const calls = remote.stats.calls;
    const lists = session()!.lists;
    remote.setTools(ToolShifts.description());
    // The proxy heard the notification: its quiet discovery listed the server again on that session.
    await eventually(
      async () => ((session()?.lists ?? 0) > lists ? true : undefined),
      HELD_WAIT_MS,
      'the notification to be heard',
    );
    expect(await send(run)).toMatchObject({
      code: 'held_for_review',
      details: { server: 'mail', tool: 'mail__send_email' },
    });
    expect(remote.stats.calls).toBe(calls);
    front.holdHandshakes = false;
  });

  it('legacy server whose session stream is not open yet: a change it could not announce is found before the next call, which is refused, the server not called', async () => {
    const remote = await start({ era: 'legacy' });
    // Holds back every GET (event stream): the sessions' streams open late, as on a busy machine.
    const front = await forwardingFront(remote.url);
    closers.push(() => front.close());
    front.holdStreams = true;
    const { send } = await account(front.url, 'strict');
    const run = `late-stream-${Date.now()}`;
    expect(await send(run)).toMatchObject({ result: { text: 'sent to a@b.c' } });
    const calls = remote.stats.calls;
    // No session has a stream to hear this on: the server drops its notification.
    remote.setTools(ToolShifts.description());
    expect(await send(run)).toMatchObject({
      code: 'held_for_review',
      details: { server: 'mail', tool: 'mail__send_email' },
    });
    expect(remote.stats.calls).toBe(calls);
  });

  it('a list with a cache hint is reused within it: strict calls cost no listing each', async () => {
    const remote = await start({ listHints: { ttlMs: 60_000, cacheScope: 'private' } });
    const { send } = await account(remote.url, 'strict');
    // One run: its connection stays open between the calls (a call without one opens its own).
    const run = `hinted-${Date.now()}`;
    expect(await send(run)).toMatchObject({ result: { text: 'sent to a@b.c' } });
    const lists = remote.stats.listCalls;
    for (let i = 0; i < 5; i++) expect(await send(run)).toMatchObject({ result: { text: 'sent to a@b.c' } });
    expect(remote.stats.listCalls).toBe(lists);
  });

  it('no listing to be had: the strict call is refused (transport_error, contract_unverified) and the server not called', async () => {
    const remote = await start();
    const front = await forwardingFront(remote.url);
    closers.push(() => front.close());
    const { send } = await account(front.url, 'strict');
    expect(await send()).toMatchObject({ result: { text: 'sent to a@b.c' } });
    const calls = remote.stats.calls;
    front.failLists = true;
    expect(await send()).toMatchObject({
      code: 'transport_error',
      details: { server: 'mail', tool: 'mail__send_email', reason: 'contract_unverified' },
    });
    expect(remote.stats.calls).toBe(calls);
    front.failLists = false;
    expect(await send()).toMatchObject({ result: { text: 'sent to a@b.c' } });
  });

  it("review and off: today's behaviour, the call runs against what the server now lists and the proxy lists nothing for it", async () => {
    for (const pin of ['review', 'off'] as const) {
      const remote = await start();
      const { send } = await account(remote.url, pin);
      const run = `${pin}-${Date.now()}`;
      expect(await send(run)).toMatchObject({ result: { text: 'sent to a@b.c' } });
      // The connection's opening listing (quiet discovery) may land just after the first call.
      await eventually(
        async () => (remote.stats.listCalls >= 2 ? true : undefined),
        HELD_WAIT_MS,
        'the opening listing',
      );
      const calls = remote.stats.calls;
      remote.setTools(ToolShifts.description());
      // The registry listens for the server's list changes and lists it itself: let that settle,
      // so that what is counted below is the call's alone.
      const lists = await steady(() => remote.stats.listCalls);
      expect(await send(run)).toMatchObject({ result: { text: 'sent to a@b.c' } });
      expect(remote.stats.calls).toBe(calls + 1);
      expect(remote.stats.listCalls).toBe(lists);
    }
  });
});

/**
 * A server's pin mode is part of its credentials as the proxy reads them, with its catalog entry:
 * a `SetMcpServer` that changes the pin must reach a proxy whose entry of the server is warm. The
 * proxy is this test's own, so its count of applied invalidations can be read.
 */
describe('strict pinning: a pin changed to strict reaches a warm proxy with the server event', () => {
  let h: RegistryHarness;
  let proxy: RunningProxy;
  let remote: TestMcpServer | undefined;
  beforeAll(async () => {
    h = await RegistryHarness.start();
    proxy = await startProxy(h.config('proxy'), {
      telemetry: await testTelemetry(),
      logSink: (line) => void h.logs.push(line),
    });
  });
  afterAll(async () => {
    await proxy?.stop();
    await h?.stop();
    await remote?.close();
  });

  it('review → strict: the first call after the server event is checked against the accepted contract; the server is not called', async () => {
    // Every message since the proxy started: the proxy applies one invalidation per event of these kinds.
    const captured = await h.capture();
    const base = proxy.stats().invalidations;
    const invalidating = (): number => h.invalidating(captured.messages);
    remote = await startTestMcpServer({ era: 'modern', tools: shiftingTools() });
    const api = h.api();
    await api.act('SetMcpServer', { name: 'mail', config: { url: remote.url, pin: 'review' } });
    const { agent } = await api.act('CreateAgent', { name: 'bot', definition: { mcpServers: ['mail'] } });
    await eventually(
      async () => {
        const r = await api.act('ListAgentTools', { agent: agent.id });
        return r.tools.length === 2 ? true : undefined;
      },
      HELD_WAIT_MS,
      'the tools to be projected',
    );
    const send = () =>
      api
        .act('InvokeTool', { agent: agent.id, tool: 'mail__send_email', arguments: { to: 'a@b.c' } })
        .catch((e: unknown) => e as { code: string; details: Record<string, unknown> });
    // The proxy's entry of the server is warm, read as `review`.
    expect(await send()).toMatchObject({ result: { text: 'sent to a@b.c' } });
    const from = captured.messages.length;
    await api.act('SetMcpServer', { name: 'mail', config: { url: remote.url, pin: 'strict' } });
    await eventually(
      async () => {
        const event = captured.messages
          .slice(from)
          .some((m) => h.subjects.parseServerEvent(m.subject)?.server === 'mail');
        return event && proxy.stats().invalidations - base >= invalidating() ? true : undefined;
      },
      HELD_WAIT_MS,
      'the proxy to apply the server event',
    );
    captured.stop();
    const calls = remote.stats.calls;
    remote.setTools(ToolShifts.description());
    expect(await send()).toMatchObject({
      code: 'held_for_review',
      details: { server: 'mail', tool: 'mail__send_email' },
    });
    expect(remote.stats.calls).toBe(calls);
  });
});

/** `read()` once it has not moved for 750 ms (at most 10 s). */
async function steady(read: () => number): Promise<number> {
  let value = read();
  let since = Date.now();
  for (const deadline = Date.now() + 10_000; Date.now() < deadline;) {
    await new Promise((r) => setTimeout(r, 50));
    const now = read();
    if (now !== value) {
      value = now;
      since = Date.now();
    } else if (Date.now() - since >= 750) return value;
  }
  throw new Error('the count did not settle within 10 s');
}

/**
 * A forwarder in front of a server that answers `tools/list` with HTTP 503 while `failLists` is
 * set (a server whose listing fails while its calls would still run). While `holdStreams` is set
 * it holds back every GET (a legacy session's event stream: one the client opens late), and while
 * `holdHandshakes` is set every `initialize` (no new session opens: the sessions open go on).
 * What was held goes on once the flag is cleared.
 */
async function forwardingFront(target: string): Promise<{
  url: string;
  failLists: boolean;
  holdStreams: boolean;
  holdHandshakes: boolean;
  close(): Promise<void>;
}> {
  const state = { failLists: false };
  const held = { streams: new Holding(), handshakes: new Holding() };
  const forward = (req: IncomingMessage, res: ServerResponse, body: Buffer): void => {
    const to = new URL(req.url ?? '/', target);
    const upstream = httpRequest(to, { method: req.method, headers: { ...req.headers, host: to.host } }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    // A client that goes (a GET stream closed) takes its upstream request with it.
    res.on('close', () => upstream.destroy());
    upstream.end(body);
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      let method: unknown;
      try {
        method = (JSON.parse(body.toString('utf8')) as { method?: unknown }).method;
      } catch {
        method = undefined;
      }
      if (state.failLists && method === 'tools/list') {
        res.writeHead(503, { 'content-type': 'text/plain' }).end('listing unavailable');
        return;
      }
      const holding = req.method === 'GET' ? held.streams : method === 'initialize' ? held.handshakes : undefined;
      if (holding !== undefined) holding.run(() => forward(req, res, body));
      else forward(req, res, body);
    });
  });
  const listening = await listenOnLoopback(server);
  return {
    url: `http://127.0.0.1:${listening.port}/mcp`,
    get failLists() {
      return state.failLists;
    },
    set failLists(v: boolean) {
      state.failLists = v;
    },
    get holdStreams() {
      return held.streams.on;
    },
    set holdStreams(v: boolean) {
      held.streams.set(v);
    },
    get holdHandshakes() {
      return held.handshakes.on;
    },
    set holdHandshakes(v: boolean) {
      held.handshakes.set(v);
    },
    close: () => listening.close(),
  };
}

/** Requests held back while `on`, sent on when it is cleared. */
class Holding {
  on = false;
  private readonly waiting: Array<() => void> = [];

  run(go: () => void): void {
    if (this.on) this.waiting.push(go);
    else go();
  }

  set(on: boolean): void {
    this.on = on;
    if (!on) for (const go of this.waiting.splice(0)) go();
  }
}
