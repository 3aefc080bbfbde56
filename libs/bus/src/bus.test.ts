import { randomBytes } from 'node:crypto';
import { connect, type Msg, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import {
  ErrorCodes,
  FieldRules,
  WireError,
  decodeRequest,
  decodeStrict,
  encodePayload,
  makeSubjects,
  payloadDecoder,
} from '@mcpx/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectBus, ensureStreams, isStreamNotFound, type Bus } from './bus.js';
import { payload } from './listen.js';
import type { BusLog } from './log.js';
import { respond } from './notify.js';

const { int, anything } = FieldRules;
/** A request `{n}` with an integer n. */
const decodeN = payloadDecoder('payload', { n: int });

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
    for (const name of [bus.subjects.mcpEventsStream, bus.subjects.agentToolsStream])
      await bus.jsm.streams.delete(name).catch(() => false);
    await bus.close();
  });

  it('answers internal to a handler that throws a plain Error, and logs it once with the subject, never the payload', async () => {
    entries.length = 0;
    const subject = `${prefix}test.fails`;
    const sub = bus.serve(subject, 'bus-test', decodeRequest, () => Promise.reject(new Error('disk on fire')));
    try {
      const err = await bus.request(subject, { note: 'PAYLOAD-MARKER' }, anything, 5_000).catch((e: unknown) => e);
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
    const sub = bus.serve(subject, 'bus-test', decodeRequest, () =>
      Promise.reject(new WireError(ErrorCodes.notFound, 'no such thing')),
    );
    try {
      await expect(bus.request(subject, {}, anything, 5_000)).rejects.toMatchObject({
        code: ErrorCodes.notFound,
        message: 'no such thing',
      });
      const ok = bus.serve(`${prefix}test.adds`, 'bus-test', decodeN, (req) => Promise.resolve(req.n + 1));
      await expect(bus.request(`${prefix}test.adds`, { n: 1 }, int, 5_000)).resolves.toBe(2);
      ok.unsubscribe();
      expect(entries).toEqual([]);
    } finally {
      sub.unsubscribe();
    }
  });

  it('logs a subscription error', async () => {
    entries.length = 0;
    const subject = `${prefix}test.denied`;
    const sub = bus.serve(subject, 'bus-test', decodeRequest, () => Promise.resolve(1));
    // The client reports a permissions violation by calling the callback with an error (and an
    // empty message); a server of this suite's own grants everything, so the test does the same.
    await sub.callback(new Error("Permissions Violation for Subscription to 'x'"), {} as Msg);
    sub.unsubscribe();
    expect(entries).toHaveLength(1);
    expect(entries[0]?.fields).toMatchObject({ subject, queue: 'bus-test' });
    expect((entries[0]?.fields?.err as Error).message).toMatch(/Permissions Violation/);
  });
});

describe('bus: the inbox prefix (real NATS)', () => {
  it("makes every reply inbox of the connection under the prefix it is given, nats.js' _INBOX without one", async () => {
    const own = await connectBus({ url: natsUrl, name: 'bus-test-inbox', prefix, inboxPrefix: '_INBOX_bustest' });
    const plain = await connectBus({ url: natsUrl, name: 'bus-test-inbox-default', prefix });
    const subject = `${prefix}test.inbox`;
    const seen: string[] = [];
    const sub = plain.nc.subscribe(subject, {
      callback: (_e, m) => void (seen.push(m.reply ?? ''), m.respond(encodePayload({ ok: true, value: 1 }))),
    });
    try {
      await plain.nc.flush();
      expect(own.inboxPrefix).toBe('_INBOX_bustest');
      expect(plain.inboxPrefix).toBe('_INBOX');
      await expect(own.request(subject, {}, int, 5_000)).resolves.toBe(1);
      await expect(plain.request(subject, {}, int, 5_000)).resolves.toBe(1);
      expect(seen[0]).toMatch(/^_INBOX_bustest\./);
      expect(seen[1]).toMatch(/^_INBOX\.[^.]+/);
    } finally {
      sub.unsubscribe();
      await own.close();
      await plain.close();
    }
  });
});

describe('bus: malformed requests and replies (real NATS)', () => {
  const entries: Entry[] = [];
  const log: BusLog = {
    error: (msg, fields) => void entries.push({ msg, fields }),
    warn: (msg, fields) => void entries.push({ msg, fields }),
  };
  let bus: Bus;
  let raw: NatsConnection;

  beforeAll(async () => {
    bus = await connectBus({ url: natsUrl, name: 'bus-test-malformed', prefix, log });
    raw = await connect({ servers: natsUrl, name: 'bus-test-raw' });
  });

  afterAll(async () => {
    await raw.close();
    await bus.close();
  });

  it('answers an empty, a non-CBOR, a tagged and a non-map request with invalid_input, logs none of their bytes, and keeps serving', async () => {
    entries.length = 0;
    const subject = `${prefix}test.malformed`;
    const sub = bus.serve(subject, 'bus-test', decodeN, (req) => Promise.resolve(req.n * 2));
    // The subscription is on the bus's connection; the requests come over another one.
    await bus.nc.flush();
    try {
      const marker = new TextEncoder().encode('PAYLOAD-MARKER');
      const bad = [
        new Uint8Array(0),
        Uint8Array.from([0xff, ...marker]),
        Uint8Array.from([0xd8, 28, 0x81, 0xd8, 29, 0x00]),
        Uint8Array.from([0x63, 0x61, 0x62, 0x63]),
        Uint8Array.from([0x9f, 0x01, 0xff]),
      ];
      for (const bytes of bad) {
        const reply = await raw.request(subject, bytes, { timeout: 5_000 });
        expect(decodeStrict(reply.data, 'reply')).toMatchObject({
          ok: false,
          error: { code: ErrorCodes.invalidInput, details: { field: 'payload' } },
        });
      }
      // The same connection still answers a good request.
      await expect(bus.request(subject, { n: 21 }, int, 5_000)).resolves.toBe(42);
      expect(entries.map((e) => e.msg)).toEqual(Array(bad.length).fill('refused a malformed request'));
      expect(JSON.stringify(entries)).not.toContain('PAYLOAD-MARKER');
    } finally {
      sub.unsubscribe();
    }
  });

  it("turns a malformed reply into a typed internal error (the responder's fault), not a crash", async () => {
    const subject = `${prefix}test.badreply`;
    const replies = [new Uint8Array(0), Uint8Array.from([0xd8, 28, 0x00]), encodePayload({ value: 1 })];
    let i = 0;
    const sub = raw.subscribe(subject, { callback: (_e, m) => void m.respond(replies[i++ % replies.length]) });
    try {
      await raw.flush();
      for (let k = 0; k < replies.length; k++) {
        await expect(bus.request(subject, {}, anything, 5_000)).rejects.toMatchObject({
          code: ErrorCodes.internal,
          details: { field: 'reply' },
        });
      }
    } finally {
      sub.unsubscribe();
    }
  });
});

describe('bus: decoders on both sides, listen, the JetStream publisher (real NATS)', () => {
  const entries: Entry[] = [];
  const log: BusLog = {
    error: (msg, fields) => void entries.push({ msg, fields }),
    warn: (msg, fields) => void entries.push({ msg, fields }),
  };
  let bus: Bus;

  beforeAll(async () => {
    bus = await connectBus({ url: natsUrl, name: 'bus-test-decoders', prefix, log });
  });

  afterAll(async () => {
    for (const name of [bus.subjects.mcpEventsStream, bus.subjects.agentToolsStream])
      await bus.jsm.streams.delete(name).catch(() => false);
    await bus.close();
  });

  it('refuses a request of the wrong shape with invalid_input naming the field, before the handler runs', async () => {
    entries.length = 0;
    const subject = `${prefix}test.shape`;
    let ran = 0;
    const sub = bus.serve(subject, 'bus-test', decodeN, (req) => Promise.resolve((ran++, req.n)));
    try {
      await expect(bus.request(subject, { n: 'one' }, int, 5_000)).rejects.toMatchObject({
        code: ErrorCodes.invalidInput,
        details: { field: 'n' },
      });
      expect(ran).toBe(0);
      expect(entries.map((e) => e.msg)).toEqual(['refused a malformed request']);
    } finally {
      sub.unsubscribe();
    }
  });

  it("refuses a reply value its decoder does not accept: internal, naming the value's field (the responder's fault)", async () => {
    const subject = `${prefix}test.value`;
    const sub = bus.serve(subject, 'bus-test', decodeRequest, () => Promise.resolve({ n: 'not a number' }));
    try {
      const decodeValue = FieldRules.shape({ n: int });
      await expect(bus.request(subject, {}, decodeValue, 5_000)).rejects.toMatchObject({
        code: ErrorCodes.internal,
        details: { field: 'reply.value.n' },
      });
    } finally {
      sub.unsubscribe();
    }
  });

  it('listen: a message that does not decode is logged without its bytes and dropped; the next one is handled', async () => {
    entries.length = 0;
    const subject = `${prefix}test.listen`;
    const seen: number[] = [];
    const sub = bus.listen(
      subject,
      (msg) => decodeN(msg.data).n,
      (n) => void seen.push(n),
      { what: 'test message' },
    );
    try {
      await bus.nc.flush();
      bus.nc.publish(subject, Uint8Array.from([0xff, ...new TextEncoder().encode('PAYLOAD-MARKER')]));
      bus.nc.publish(subject, encodePayload({ n: 'x' }));
      bus.nc.publish(subject, encodePayload({ n: 7 }));
      await bus.nc.flush();
      for (let i = 0; i < 50 && seen.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
      expect(seen).toEqual([7]);
      expect(entries.map((e) => e.msg)).toEqual([
        'dropped a malformed test message',
        'dropped a malformed test message',
      ]);
      expect(entries[1]?.fields).toMatchObject({ subject, field: 'n' });
      expect(JSON.stringify(entries)).not.toContain('PAYLOAD-MARKER');
      // The connection survived a handler that throws.
      const boom = bus.listen(
        subject,
        (msg) => msg.subject,
        () => {
          throw new Error('handler fault');
        },
        { what: 'faulty message' },
      );
      bus.nc.publish(subject, encodePayload({ n: 8 }));
      await bus.nc.flush();
      for (let i = 0; i < 50 && seen.length < 2; i++) await new Promise((r) => setTimeout(r, 20));
      expect(seen).toEqual([7, 8]);
      expect(bus.nc.isClosed()).toBe(false);
      boom.unsubscribe();
    } finally {
      sub.unsubscribe();
    }
  });

  it('notify: a notification arrives as its payload, decoded by listen; respond answers a request in the one envelope', async () => {
    const subject = `${prefix}test.notify`;
    const seen: number[] = [];
    const sub = bus.listen(subject, payload(decodeN), (m) => void seen.push(m.n), { what: 'test notification' });
    const asked = `${prefix}test.respond`;
    // Answers only even numbers: silence is "not here".
    const responder = bus.listen(
      asked,
      payload(decodeN),
      (m, msg) => void (m.n % 2 === 0 && respond(msg, { half: m.n / 2 })),
      { what: 'test question' },
    );
    try {
      await bus.nc.flush();
      bus.notify(subject, { n: 3 });
      await bus.nc.flush();
      for (let i = 0; i < 50 && seen.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
      expect(seen).toEqual([3]);
      await expect(bus.request(asked, { n: 4 }, FieldRules.shape({ half: int }), 5_000)).resolves.toEqual({ half: 2 });
      await expect(bus.request(asked, { n: 5 }, anything, 300)).rejects.toMatchObject({ name: 'TimeoutError' });
    } finally {
      sub.unsubscribe();
      responder.unsubscribe();
    }
  });

  it('publishEvent: an event published twice under one msg id is stored once', async () => {
    const subject = bus.subjects.serverDeleted('acct', 'srv');
    const before = (await bus.jsm.streams.info(bus.subjects.mcpEventsStream)).state.messages;
    const event = { account: 'acct', server: 'srv', serverId: 's1' };
    await bus.publishEvent(subject, event, 'deleted:s1');
    await bus.publishEvent(subject, event, 'deleted:s1');
    await bus.publishEvent(subject, event, 'deleted:s2');
    expect((await bus.jsm.streams.info(bus.subjects.mcpEventsStream)).state.messages - before).toBe(2);
  });

  it('publishEvent: a subject no stream holds fails with PublishError, not a hang', async () => {
    await expect(bus.publishEvent(`${prefix}nowhere.event`, {}, 'x')).rejects.toMatchObject({ name: 'PublishError' });
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
    const create = nc.subscribe(`${apiPrefix}.STREAM.CREATE.*`, {
      callback: (_err, msg) => void creates.push(msg.subject),
    });
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
