/**
 * A registry killed (SIGKILL, a real process) between the commit of a change and the publish of
 * its JetStream event, for every kind of event the registry sends: a discovery's
 * `server.discovered` (SetMcpServer), a permission change's (SetToolPermission), a review
 * decision's (AcceptToolChange), a vendor connection's built-ins' (SetVendorConnection), and a
 * deleted server's `server.deleted` (DeleteMcpServer); `agent.changed` is the infrastructure
 * fault test's. The registry reaches NATS through a front that is turned into a black hole: the
 * commit happens, the event never leaves. The test waits for the event's outbox row (written in
 * the change's transaction), kills the registry, starts a new one, and sees the event delivered
 * by its sweep, exactly once (its message id stored once in the stream), with the projector's
 * view following it. A duplicate of one event, sent again with its message id, is dropped by
 * JetStream and leaves the projector's view as it was.
 */
import pg from 'pg';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodePayload } from '@mcpx/contracts';
import { addTool, echoTool, startTestMcpServer, type TestMcpServer } from '../../servers/index.js';
import type { FaultyFront } from '../support/faulty-front.js';
import { startFaultStack, type FaultStack } from '../support/fault-stack.js';
import { available, PrivateNats } from '../support/infra.js';
import { until, type Stack } from '../support/stack.js';

const have = available();

function report(line: string): void {
  process.stdout.write(`fault: ${line}\n`);
}

interface OutboxRow {
  subject: string;
  /** jsonb: as the outbox stored it. */
  payload: unknown;
  msg_id: string;
}

describe.skipIf(!have.nats)('a registry killed between a commit and its event, per event kind', () => {
  let fixture: FaultStack<PrivateNats> | undefined;
  let front: FaultyFront;
  let stack: Stack;
  let upstream: TestMcpServer;
  let pinnedUpstream: TestMcpServer;
  let db: pg.Client;
  let agentId: string;

  beforeAll(async () => {
    // The registry reaches NATS through the front; the projector and the proxy directly.
    [fixture, pinnedUpstream] = await Promise.all([
      startFaultStack({
        infra: PrivateNats.create(),
        stack: (n) => ({ nats: n.url }),
        registryThroughFront: { port: (n) => n.port },
      }),
      startTestMcpServer({ era: 'modern', tools: [echoTool()] }),
    ]);
    ({ stack, upstream } = fixture);
    front = fixture.front!;
    db = new pg.Client({ connectionString: stack.env.DATABASE_URL });
    await db.connect();
    agentId = await stack.createAgent('bot', ['up']);
  }, 120_000);

  afterAll(async () => {
    await db?.end();
    await fixture?.stop();
    await pinnedUpstream?.close();
  });

  const toolsOf = async (
    agent: string,
  ): Promise<{ version: number; tools: Array<{ name: string; permission?: string }> }> =>
    stack.api.act('ListAgentTools', { agent });

  /** The messages of `subject` in the stream carrying `msgId` (read with an ordered consumer). */
  const storedWithId = async (subject: string, msgId: string): Promise<number> => {
    const jsm = await jetstreamManager(stack.nc);
    const stream = await jsm.streams.find(subject);
    const total = (await jsm.streams.info(stream, { subjects_filter: subject })).state.subjects?.[subject] ?? 0;
    if (total === 0) return 0;
    const consumer = await jetstream(stack.nc).consumers.get(stream, { filter_subjects: subject });
    let seen = 0;
    let read = 0;
    const messages = await consumer.fetch({ max_messages: total, expires: 5_000 });
    for await (const m of messages) {
      if (m.headers?.get('Nats-Msg-Id') === msgId) seen++;
      if (++read >= total) break;
    }
    await consumer.delete();
    return seen;
  };

  /**
   * Turns the registry's NATS into a black hole, runs `change` (not awaited: its publish never
   * returns an ack), waits for the outbox rows `subjects` name (the change committed), kills the
   * registry, and starts a new one through the front again. Returns the rows that were left.
   */
  const killBetweenCommitAndPublish = async (
    what: string,
    change: () => Promise<unknown>,
    subjects: string[],
  ): Promise<OutboxRow[]> => {
    const [registry] = stack.of('registry').filter((s) => s.alive());
    front.mode = 'blackhole';
    const pending = change().catch(() => undefined);
    const rows = await until(
      async () => {
        const found = (
          await db.query<OutboxRow>(
            'SELECT subject, payload, msg_id FROM registry.event_outbox WHERE subject = ANY($1) ORDER BY id',
            [subjects],
          )
        ).rows;
        return subjects.every((s) => found.some((r) => r.subject === s)) ? found : undefined;
      },
      20_000,
      `${what}: the change committed with its event in the outbox`,
    );
    await stack.kill(registry!);
    await pending;
    front.mode = 'pass';
    const started = Date.now();
    await stack.spawn('registry', { NATS_URL: `nats://127.0.0.1:${front.port}` });
    // Delivered by the new registry's sweep: each row's message id is in the stream exactly once.
    for (const row of rows) {
      const once = await until(
        async () => ((await storedWithId(row.subject, row.msg_id)) >= 1 ? true : undefined),
        20_000,
        `${what}: ${row.msg_id} delivered`,
      ).catch(() => false);
      expect(once, `${what}: the event ${row.msg_id} reached JetStream after the restart`).toBe(true);
      expect(await storedWithId(row.subject, row.msg_id)).toBe(1);
    }
    report(
      `registry killed between commit and event (${what}): ${rows.length} event(s) delivered by the next registry's sweep in ${Date.now() - started} ms (start included), each once`,
    );
    return rows;
  };

  it("a discovery's server.discovered (SetMcpServer); a duplicate of it is dropped and leaves the projector's view as it was", async () => {
    const subject = stack.subjects.serverDiscovered(stack.principal, 'late');
    const [row] = await killBetweenCommitAndPublish(
      'discovery',
      () => stack.api.act('SetMcpServer', { name: 'late', config: { url: upstream.url } }),
      [subject],
    );
    // The projector got the tools: an agent granted the server sees them.
    await stack.api.act('UpdateAgent', { agent: agentId, definition: { mcpServers: ['up', 'late'] } });
    const view = await until(
      async () => {
        const t = await toolsOf(agentId);
        return t.tools.some((d) => d.name === 'late__echo') ? t : undefined;
      },
      20_000,
      'late__echo projected',
    );
    // The same event again, with its message id: JetStream stores it once; the view does not move.
    const ack = await jetstream(stack.nc).publish(row!.subject, encodePayload(row!.payload), { msgID: row!.msg_id });
    expect(ack.duplicate).toBe(true);
    expect(await storedWithId(row!.subject, row!.msg_id)).toBe(1);
    const after = await toolsOf(agentId);
    expect(after.version).toBe(view.version);
    expect(after.tools.map((d) => d.name).sort()).toEqual(view.tools.map((d) => d.name).sort());
  }, 90_000);

  it("a permission change's server.discovered (SetToolPermission)", async () => {
    const subject = stack.subjects.serverDiscovered(stack.principal, 'up');
    await killBetweenCommitAndPublish(
      'permission',
      () => stack.api.act('SetToolPermission', { server: 'up', tool: 'echo', permission: 'always_ask' }),
      [subject],
    );
    const projected = await until(
      async () =>
        (await toolsOf(agentId)).tools.find((d) => d.name === 'up__echo')?.permission === 'always_ask'
          ? true
          : undefined,
      20_000,
      'up__echo always_ask',
    );
    expect(projected).toBe(true);
  }, 90_000);

  it("a review decision's server.discovered (AcceptToolChange)", async () => {
    await stack.api.act('SetMcpServer', { name: 'pinned', config: { url: pinnedUpstream.url, pin: 'review' } });
    const { agent } = await stack.api.act<{ agent: { id: string } }>('CreateAgent', {
      name: 'reviewed',
      definition: { mcpServers: ['pinned'] },
    });
    await until(
      async () => ((await toolsOf(agent.id)).tools.length === 1 ? true : undefined),
      20_000,
      'pinned__echo projected',
    );
    // A new tool is held for review.
    pinnedUpstream.setTools([echoTool(), addTool()]);
    await stack.api.act('RefreshMcpServer', { name: 'pinned' });
    const [change] = (
      await stack.api.act<{ changes: Array<{ tool: string; cid: string }> }>('ListToolChanges', { server: 'pinned' })
    ).changes;
    expect(change?.tool).toBe('add');
    const subject = stack.subjects.serverDiscovered(stack.principal, 'pinned');
    // Only the rows written from here on: the refresh's own event may still be in flight.
    await until(
      async () =>
        (await db.query('SELECT 1 FROM registry.event_outbox WHERE subject = $1', [subject])).rowCount === 0
          ? true
          : undefined,
      20_000,
      "the refresh's event sent",
    );
    await killBetweenCommitAndPublish(
      'review',
      () => stack.api.act('AcceptToolChange', { server: 'pinned', tool: 'add', cid: change!.cid }),
      [subject],
    );
    const accepted = await until(
      async () => ((await toolsOf(agent.id)).tools.some((d) => d.name === 'pinned__add') ? true : undefined),
      20_000,
      'pinned__add projected',
    );
    expect(accepted).toBe(true);
  }, 90_000);

  it("a vendor connection's built-ins' server.discovered (SetVendorConnection)", async () => {
    const subjects = ['github'].map((slug) => stack.subjects.serverDiscovered(stack.principal, slug));
    const rows = await killBetweenCommitAndPublish(
      'vendor connection',
      () => stack.api.act('SetVendorConnection', { vendor: 'github', accessToken: 'gho_killedBetween1' }),
      subjects,
    );
    // The event carries no token.
    for (const row of rows) expect(JSON.stringify(row.payload)).not.toContain('gho_killedBetween1');
    const documents = await until(
      async () => {
        const n = (
          await db.query<{ n: string }>(
            "SELECT count(*) AS n FROM projector.tool_documents WHERE account_id = $1 AND server = 'github'",
            [stack.principal],
          )
        ).rows[0]?.n;
        return Number(n) > 0 ? Number(n) : undefined;
      },
      20_000,
      'the built-in projected',
    );
    expect(documents).toBeGreaterThan(0);
  }, 90_000);

  it("a deleted server's server.deleted (DeleteMcpServer)", async () => {
    await stack.setServer('doomed', upstream.url);
    const serverId = (
      await db.query<{ id: string }>("SELECT id FROM registry.mcp_servers WHERE account_id = $1 AND name = 'doomed'", [
        stack.principal,
      ])
    ).rows[0]!.id;
    const documents = async (): Promise<number> =>
      Number(
        (
          await db.query<{ n: string }>(
            'SELECT count(*) AS n FROM projector.tool_documents WHERE account_id = $1 AND server_id = $2',
            [stack.principal, serverId],
          )
        ).rows[0]?.n,
      );
    await until(async () => ((await documents()) > 0 ? true : undefined), 20_000, 'doomed projected');
    const subject = stack.subjects.serverDeleted(stack.principal, 'doomed');
    await killBetweenCommitAndPublish('deleted server', () => stack.api.act('DeleteMcpServer', { name: 'doomed' }), [
      subject,
    ]);
    const dropped = await until(
      async () => ((await documents()) === 0 ? true : undefined),
      20_000,
      "doomed's documents dropped",
    );
    expect(dropped).toBe(true);
  }, 90_000);
});
