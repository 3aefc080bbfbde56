import { randomBytes } from 'node:crypto';
import { connect, type Msg, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { ErrorCodes, WireError, makeSubjects } from '@mcpx/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectBus, ensureStreams, isStreamNotFound, type Bus, type BusLog } from './bus.js';

const natsUrl = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';

interface Entry {
  msg: string;
  fields: Record<string, unknown> | undefined;
}

/** A NATS namespace of this test file's own (`t<hex>.`). */
const prefix = `t${randomBytes(4).toString('hex')}.`;

describe('bus (real NATS)', () => {
  const entries: Entry[] = [];
  const log: BusLog = { error: (msg, fields) => void entries.push({ msg, fields }) };
  let bus: Bus;

  beforeAll(async () => {
    bus = await connectBus({ url: natsUrl, name: 'bus-test', prefix, log });
  });

  afterAll(async () => {
    for (const name of [bus.subjects.mcpEventsStream, bus.subjects.agentToolsStream]) await bus.jsm.streams.delete(name).catch(() => false);
    await bus.close();
  });

  it('answers internal to a handler that throws a plain Error, and logs it once with the subject, never the payload', async () => {
    entries.length = 0;
    const subject = `${prefix}test.fails`;
    const sub = bus.serve<{ note: string }, never>(subject, 'bus-test', () => Promise.reject(new Error('disk on fire')));
    try {
      const err = await bus.request(subject, { note: 'PAYLOAD-MARKER' }, 5_000).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(WireError);
      expect(err).toMatchObject({ code: ErrorCodes.internal, message: 'internal error' });
      expect(entries).toHaveLength(1);
      const [entry] = entries;
      expect(entry?.fields?.subject).toBe(subject);
      expect(entry?.fields?.err).toBeInstanceOf(Error);
      expect((entry?.fields?.err as Error).message).toBe('disk on fire');
      expect(JSON.stringify(entry)).not.toContain('PAYLOAD-MARKER');
    } finally {
      sub.unsubscribe();
    }
  });

  it('sends a thrown WireError back as it is, and logs nothing: it is the answer', async () => {
    entries.length = 0;
    const subject = `${prefix}test.refuses`;
    const sub = bus.serve(subject, 'bus-test', () => Promise.reject(new WireError(ErrorCodes.notFound, 'no such thing')));
    try {
      await expect(bus.request(subject, {}, 5_000)).rejects.toMatchObject({ code: ErrorCodes.notFound, message: 'no such thing' });
      const ok = bus.serve<{ n: number }, number>(`${prefix}test.adds`, 'bus-test', (req) => Promise.resolve(req.n + 1));
      await expect(bus.request<number>(`${prefix}test.adds`, { n: 1 }, 5_000)).resolves.toBe(2);
      ok.unsubscribe();
      expect(entries).toEqual([]);
    } finally {
      sub.unsubscribe();
    }
  });

  it('logs a subscription error', async () => {
    entries.length = 0;
    const subject = `${prefix}test.denied`;
    const sub = bus.serve(subject, 'bus-test', () => Promise.resolve(1));
    // The client reports a permissions violation by calling the callback with an error (and an
    // empty message); a server of this suite's own grants everything, so the test does the same.
    await sub.callback(new Error("Permissions Violation for Subscription to 'x'"), {} as Msg);
    sub.unsubscribe();
    expect(entries).toHaveLength(1);
    expect(entries[0]?.fields).toMatchObject({ subject, queue: 'bus-test' });
    expect((entries[0]?.fields?.err as Error).message).toMatch(/Permissions Violation/);
  });
});

describe('ensureStreams (real NATS)', () => {
  let nc: NatsConnection;

  beforeAll(async () => {
    nc = await connect({ servers: natsUrl, name: 'bus-test-streams' });
  });

  afterAll(async () => {
    await nc.close();
  });

  it('tells "stream not found" apart from every other failure', async () => {
    const jsm = await jetstreamManager(nc);
    const notFound = await jsm.streams.info(`${prefix.replace('.', '_')}NO_SUCH_STREAM`).catch((e: unknown) => e);
    expect(isStreamNotFound(notFound)).toBe(true);
    // No JetStream behind this API prefix: no responders.
    const elsewhere = await jetstreamManager(nc, { apiPrefix: `${prefix}nojs`, checkAPI: false, timeout: 1_000 });
    const notEnabled = await elsewhere.streams.info('ANY').catch((e: unknown) => e);
    expect(notEnabled).toBeInstanceOf(Error);
    expect(isStreamNotFound(notEnabled)).toBe(false);
    expect(isStreamNotFound(new Error('stream not found'))).toBe(false);
    expect(isStreamNotFound(undefined)).toBe(false);
  });

  it('rethrows a stream info that fails for another reason instead of creating the stream', async () => {
    // A JetStream API that never answers stream info, and records any stream creation.
    const apiPrefix = `${prefix}slowjs`;
    const creates: string[] = [];
    const info = nc.subscribe(`${apiPrefix}.STREAM.INFO.*`, { callback: () => undefined });
    const create = nc.subscribe(`${apiPrefix}.STREAM.CREATE.*`, { callback: (_err, msg) => void creates.push(msg.subject) });
    try {
      await nc.flush();
      const jsm = await jetstreamManager(nc, { apiPrefix, checkAPI: false, timeout: 300 });
      await expect(ensureStreams(jsm, makeSubjects(prefix))).rejects.toMatchObject({ name: 'TimeoutError' });
      expect(creates).toEqual([]);
    } finally {
      info.unsubscribe();
      create.unsubscribe();
    }
  });
});
