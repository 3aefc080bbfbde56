import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connectBus, type Bus } from '@mcpx/bus';
import { createDb, migrate, type Db } from '@mcpx/db';
import { createLogger } from '@mcpx/log';
import { setupTelemetry, type Telemetry } from '@mcpx/telemetry';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import { EventOutbox } from '@mcpx/registry';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFaultyFront } from '../ops/support/faulty-front.js';
import type { TestDatabase } from '../support/env.js';
import { systemEnv } from '../support/system.js';

/**
 * The registry's outbox against real Postgres and JetStream: an event is written in the
 * transaction of its change (a rolled-back change leaves none), published after the commit with
 * its message id, and deleted once stored; a failed publish leaves the row to the sweep; a row
 * published twice (a crash between the publish and the delete) is stored once; two instances
 * sweeping at once publish each row once.
 */
describe('the registry outbox (real Postgres and JetStream)', () => {
  let db: TestDatabase;
  let sql: Db;
  let bus: Bus;
  let jsm: JetStreamManager;
  let outbox: EventOutbox;
  let natsUrl: string;
  let telemetry: Telemetry;
  const spans = new InMemorySpanExporter();
  const lines: string[] = [];
  const log = createLogger('outbox-test', { sink: (l) => lines.push(l) });
  const account = `acct-${Math.random().toString(36).slice(2, 8)}`;

  beforeAll(async () => {
    const sys = await systemEnv();
    db = sys.db;
    sql = createDb(db.url, { max: 4 });
    await migrate(sql, 'registry');
    natsUrl = sys.env.NATS_URL!;
    bus = await connectBus({ url: natsUrl, name: 'outbox-test', prefix: sys.env.NATS_PREFIX });
    jsm = await jetstreamManager(bus.nc);
    telemetry = await setupTelemetry({ serviceName: 'mcpx-outbox-test', spanExporter: spans });
    outbox = new EventOutbox({ db: sql, bus, log, tracer: telemetry.tracer, meter: telemetry.meter });
  });

  afterAll(async () => {
    await bus?.close();
    await telemetry?.shutdown();
    await sql?.destroy();
    await db?.drop();
  });

  const subjectOf = (agent: string): string => bus.subjects.agentChanged(account, agent);
  const stored = async (agent: string): Promise<number> => {
    const subject = subjectOf(agent);
    const info = await jsm.streams.info(await jsm.streams.find(subject), { subjects_filter: subject });
    return info.state.subjects?.[subject] ?? 0;
  };
  const rows = async (): Promise<number> =>
    Number(
      (
        await sql
          .selectFrom('registry.event_outbox')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  const event = (agent: string, revision = 1) => ({
    subject: subjectOf(agent),
    payload: { account, agent, revision, mcpServers: [] },
    msgId: `agent-${agent}-${revision}`,
  });

  it('a rolled-back change leaves no event; a committed one is published once and leaves the outbox', async () => {
    await sql
      .transaction()
      .execute(async (trx) => {
        await outbox.record(trx, [event('rolled-back')]);
        throw new Error('the change fails');
      })
      .catch(() => undefined);
    expect(await rows()).toBe(0);
    const ids = await sql.transaction().execute((trx) => outbox.record(trx, [event('a1')]));
    await outbox.publish(ids);
    expect(await stored('a1')).toBe(1);
    expect(await stored('rolled-back')).toBe(0);
    expect(await rows()).toBe(0);
    // Traced: a span per batch published, with how many went out.
    const span = spans.getFinishedSpans().find((s) => s.name === 'registry.outbox.publish');
    expect(span?.attributes).toMatchObject({ 'mcpx.events': 1, 'mcpx.events_stored': 1 });
  });

  it('a publish that fails leaves the row (the change stays committed); the sweep sends it', async () => {
    const dead = await connectBus({ url: natsUrl, name: 'outbox-dead', prefix: bus.subjects.prefix });
    await dead.close();
    const broken = new EventOutbox({ db: sql, bus: dead, log });
    const ids = await sql.transaction().execute((trx) => broken.record(trx, [event('a2')]));
    await broken.publish(ids);
    expect(await rows()).toBe(1);
    expect(await stored('a2')).toBe(0);
    expect(lines.some((l) => l.includes('left for the sweep'))).toBe(true);
    expect(await outbox.sweep()).toBe(1);
    expect(await stored('a2')).toBe(1);
    expect(await rows()).toBe(0);
  });

  it('an event published again (a crash between its publish and its delete) is stored once', async () => {
    const e = event('a3');
    await bus.publishEvent(e.subject, e.payload, e.msgId);
    await sql.transaction().execute((trx) => outbox.record(trx, [e]));
    expect(await outbox.sweep()).toBe(1);
    expect(await stored('a3')).toBe(1);
  });

  it('two instances sweeping at once publish each row once', async () => {
    const other = new EventOutbox({ db: sql, bus, log });
    const agents = Array.from({ length: 40 }, (_, i) => `many-${i}`);
    await sql.transaction().execute((trx) =>
      outbox.record(
        trx,
        agents.map((a) => event(a)),
      ),
    );
    const [x, y] = await Promise.all([outbox.sweep(), other.sweep()]);
    expect(x + y).toBe(40);
    expect(await rows()).toBe(0);
    for (const a of agents.slice(0, 5)) expect(await stored(a)).toBe(1);
  });
  it('a publish that waits on an unreachable NATS holds no database connection: other queries on the pool run meanwhile', async () => {
    const front = await startFaultyFront({ port: Number(new URL(natsUrl).port) });
    const small = createDb(db.url, { max: 2 });
    const stuck = await connectBus({
      url: `nats://127.0.0.1:${front.port}`,
      name: 'outbox-stuck',
      prefix: bus.subjects.prefix,
    });
    try {
      const slow = new EventOutbox({ db: small, bus: stuck, log });
      // NATS accepts and never answers from now on: every publish waits for an ack that never comes.
      front.mode = 'blackhole';
      front.cut();
      let settled = 0;
      const commits = ['s1', 's2', 's3', 's4'].map((a) =>
        slow.commit(async (_trx, emit) => emit(event(a))).finally(() => settled++),
      );
      // All four committed (their rows are there) and are waiting on NATS; the pool of two still answers.
      for (
        let n = 0;
        n < 4;
        n = Number(
          (
            await small
              .selectFrom('registry.event_outbox')
              .select((eb) => eb.fn.countAll().as('n'))
              .where('msg_id', 'like', 'agent-s%')
              .executeTakeFirstOrThrow()
          ).n,
        )
      );
      await small.selectFrom('registry.event_outbox').select('id').limit(1).execute();
      expect(settled).toBe(0);
      // The connection closed: each waiting publish fails, the change stays committed.
      await stuck.nc.close();
      await Promise.all(commits);
    } finally {
      await stuck.close().catch(() => undefined);
      await small.destroy();
      await front.close().catch(() => undefined);
    }
    // The events were left for the sweep, which sends them.
    expect(await outbox.sweep()).toBe(4);
    expect(await stored('s1')).toBe(1);
  });

  it('a periodic sweep leaves the rows just committed to their committer; the sweep at start takes them', async () => {
    await sql.transaction().execute((trx) => outbox.record(trx, [event('young')]));
    expect(await outbox.sweep(10_000)).toBe(0);
    expect(await outbox.sweep()).toBe(1);
    expect(await stored('young')).toBe(1);
  });
});
