import { connect as netConnect, createServer, type Server, type Socket } from 'node:net';
import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startProjector, type RunningProjector } from '@mcpx/projector';
import { startProxy, type RunningProxy } from '@mcpx/proxy';
import { startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { shiftingTools, ToolShifts } from '../servers/shifting-tools.js';
import { RegistryHarness, testTelemetry } from '../support/registry-harness.js';
import { eventually } from '../support/system.js';

/** How long a discovery's hold, a projection or an event may take on a busy machine (a wait, not a measure). */
const HELD_WAIT_MS = 45_000;

type Refusal = { code: string; details: Record<string, unknown> };

/**
 * A call to a tool the registry has withheld for review is answered `held_for_review` from the
 * moment of the hold, whatever the proxy has heard of the projection so far: never `not_found`.
 * The registry, the projector (its NATS connection through a front that can hold back what it
 * publishes) and a proxy in this process, real Postgres, NATS and Redis, a real server on loopback.
 */
describe('a held tool is answered held_for_review, never not_found, while the projection travels', () => {
  let h: RegistryHarness;
  let front: NatsFront;
  let projector: RunningProjector;
  let proxy: RunningProxy;
  const servers: TestMcpServer[] = [];
  beforeAll(async () => {
    h = await RegistryHarness.start({ projector: false });
    const telemetry = await testTelemetry();
    const logSink = (line: string): void => void h.logs.push(line);
    front = await natsFront(h.env.NATS_URL ?? 'nats://127.0.0.1:4222');
    projector = await startProjector(h.config('projector', { NATS_URL: front.url }), { telemetry, logSink });
    proxy = await startProxy(h.config('proxy'), { telemetry, logSink });
  });
  // A failed case lets the projector's traffic through for the next.
  afterEach(() => front?.release());
  afterAll(async () => {
    await proxy?.stop();
    await projector?.stop();
    await h?.stop();
    await front?.close();
    for (const s of servers) await s.close().catch(() => undefined);
  });

  /** An account with `mail` (strict) at a fresh server and an agent granted it, its two tools projected. */
  const account = async () => {
    const remote = await startTestMcpServer({ era: 'modern', tools: shiftingTools() });
    servers.push(remote);
    const api = h.api();
    await api.act('SetMcpServer', { name: 'mail', config: { url: remote.url, pin: 'strict' } });
    const { agent } = await api.act('CreateAgent', { name: 'bot', definition: { mcpServers: ['mail'] } });
    await eventually(
      async () => ((await api.act('ListAgentTools', { agent: agent.id })).tools.length === 2 ? true : undefined),
      HELD_WAIT_MS,
      'the tools to be projected',
    );
    const call = (tool: string, args: Record<string, unknown>) =>
      api.act('InvokeTool', { agent: agent.id, tool, arguments: args }).catch((e: unknown) => e as Refusal);
    /** The projected held tools of `mail` in the account (what the projector committed). */
    const projectedHeld = async (): Promise<string[]> => {
      const r = await sql<{ held: Record<string, unknown> }>`
        SELECT held FROM projector.projected_servers WHERE account_id = ${api.principal} AND server = 'mail'`.execute(
        h.sql,
      );
      return Object.keys(r.rows[0]?.held ?? {});
    };
    return { remote, api, agent: agent.id as string, call, projectedHeld };
  };

  /** The names in the agent's projected set, as the projector committed it. */
  const projectedSet = async (account: string, agent: string): Promise<string[]> => {
    const r = await sql<{ tools: Record<string, string> }>`
      SELECT tools FROM projector.agent_tools WHERE account_id = ${account} AND agent_id = ${agent}`.execute(h.sql);
    return Object.keys(r.rows[0]?.tools ?? {}).sort();
  };

  /** Once the proxy has applied every invalidating event `captured` holds (it applies one per event). */
  const applied = async (captured: { messages: Array<{ subject: string }> }, base: number): Promise<void> => {
    await eventually(
      async () => (proxy.stats().invalidations - base >= h.invalidating(captured.messages) ? true : undefined),
      HELD_WAIT_MS,
      'the proxy to apply the events',
    );
  };

  it("a changed tool: after the projector took it out, before its agent-tools-changed reaches the proxy (the agent's old set still warm), the call is held_for_review", async () => {
    const { remote, api, agent, call, projectedHeld } = await account();
    const send = () => call('mail__send_email', { to: 'a@b.c' });
    // The proxy's entries of the agent, the document and the server's levels are warm.
    expect(await send()).toMatchObject({ result: { text: 'sent to a@b.c' } });
    const captured = await h.capture();
    const base = proxy.stats().invalidations;
    // The projector commits the agent's new set; its event to the proxy waits at the front.
    front.holdFrom(h.subjects.agentToolsChanged(api.principal, agent));
    const calls = remote.stats.calls;
    remote.setTools(ToolShifts.description());
    // The proxy's strict check refuses this one and reports the list; the registry holds the change.
    expect(await send()).toMatchObject({ code: 'held_for_review' });
    await eventually(
      async () => (front.holding && (await projectedHeld()).includes('mail__send_email') ? true : undefined),
      HELD_WAIT_MS,
      'the projector to withhold the tool, its event held back',
    );
    // (Read from the projector's rows: its answers on the bus wait at the front too.)
    expect(await projectedSet(api.principal, agent)).toEqual(['mail__lookup']);
    // The registry's server event has reached the proxy (its levels no longer list the tool); the agent's has not.
    await applied(captured, base);
    expect(captured.messages.some((m) => h.subjects.parseAgentToolsChanged(m.subject) !== null)).toBe(false);
    expect(await send()).toMatchObject({
      code: 'held_for_review',
      details: { server: 'mail', tool: 'mail__send_email' },
    });
    // Once the event comes through, the agent's set no longer names the tool: still held_for_review.
    front.release();
    await eventually(
      async () =>
        captured.messages.some((m) => h.subjects.parseAgentToolsChanged(m.subject) !== null) ? true : undefined,
      HELD_WAIT_MS,
      'the agent-tools-changed event',
    );
    await applied(captured, base);
    captured.stop();
    expect(await send()).toMatchObject({
      code: 'held_for_review',
      details: { server: 'mail', tool: 'mail__send_email' },
    });
    expect(remote.stats.calls).toBe(calls);
  });

  it('a new tool called before it was added (not_found then): once the projector holds it, the next call is held_for_review', async () => {
    const { remote, call, projectedHeld } = await account();
    const deleteAll = () => call('mail__delete_all', {});
    expect(await deleteAll()).toMatchObject({ code: 'not_found', details: { field: 'tool' } });
    const calls = remote.stats.calls;
    remote.setTools(ToolShifts.added());
    // A strict call lists the server, and the proxy reports the new list: the registry holds the new tool.
    expect(await call('mail__send_email', { to: 'a@b.c' })).toMatchObject({ result: { text: 'sent to a@b.c' } });
    // An agent that keeps calling it meanwhile (each refused: nothing holds it yet, or already held).
    await eventually(
      async () => {
        const r = await deleteAll();
        expect(['not_found', 'held_for_review']).toContain((r as Refusal).code);
        return (await projectedHeld()).includes('mail__delete_all') ? true : undefined;
      },
      HELD_WAIT_MS,
      'the projector to hold the new tool',
    );
    expect(await deleteAll()).toMatchObject({
      code: 'held_for_review',
      details: { server: 'mail', tool: 'mail__delete_all' },
    });
    expect(remote.stats.calls).toBe(calls + 1);
  });
});

/** A TCP front of a NATS server that can hold back what its clients send from a given subject on. */
interface NatsFront {
  url: string;
  /** Something sent has been held back since {@link NatsFront.holdFrom}. */
  readonly holding: boolean;
  /** From the first client bytes naming `subject` on, holds back everything the clients send (in order). */
  holdFrom(subject: string): void;
  /** Sends on what was held, and holds nothing more. */
  release(): void;
  close(): Promise<void>;
}

async function natsFront(target: string): Promise<NatsFront> {
  const to = new URL(target);
  let watch: Buffer | undefined;
  let held: Array<() => void> | undefined;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = netConnect(Number(to.port || 4222), to.hostname);
    sockets.add(client).add(upstream);
    // The last bytes of the previous chunk: a subject may straddle two chunks.
    let tail = Buffer.alloc(0);
    client.on('data', (chunk: Buffer) => {
      const seen = Buffer.concat([tail, chunk]);
      tail = seen.subarray(Math.max(0, seen.length - 256));
      if (held === undefined && watch !== undefined && seen.includes(watch)) held = [];
      if (held !== undefined) held.push(() => upstream.write(chunk));
      else upstream.write(chunk);
    });
    upstream.pipe(client);
    const end = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `nats://127.0.0.1:${port}`,
    get holding() {
      return held !== undefined && held.length > 0;
    },
    holdFrom(subject) {
      watch = Buffer.from(subject);
    },
    release() {
      watch = undefined;
      const go = held ?? [];
      held = undefined;
      for (const send of go) send();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
