import { randomUUID } from 'node:crypto';
import { connect, errors, headers, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NatsFailures, makeSubjects, natsFailure } from '@mcpx/contracts';
import { RequestMux } from '@mcpx/proxy-client';
import { serviceUrls } from '../support/env.js';
import { NatsAuthServer } from '../support/nats-auth-server.js';

/**
 * The proxy client's own request/reply (one inbox subscription, replies matched by token) keeps
 * every behaviour of nats.js' request: the reply and its headers, each reply to its own request,
 * and each failure as nats.js' own class, so `natsFailure` tells them apart. Real NATS servers.
 */
describe('RequestMux', () => {
  let nc: NatsConnection;
  let responder: NatsConnection;
  const echo = `mcpx.test.mux.${randomUUID()}`;

  beforeAll(async () => {
    nc = await connect({ servers: serviceUrls().nats, name: 'request-mux test', noAsyncTraces: true });
    responder = await connect({ servers: serviceUrls().nats, name: 'request-mux responder' });
    responder.subscribe(echo, {
      callback: (_e, m) => {
        const h = headers();
        h.set('seen', m.headers?.get('traceparent') ?? 'none');
        m.respond(m.data, { headers: h });
      },
    });
    await responder.flush();
  });

  afterAll(async () => {
    await nc?.close();
    await responder?.close();
  });

  async function failed(p: Promise<unknown>): Promise<unknown> {
    return await p.then(
      () => new Error('it succeeded'),
      (e: unknown) => e,
    );
  }

  it('answers each of many concurrent requests with its own reply, headers both ways', async () => {
    const mux = new RequestMux(nc);
    const h = headers();
    h.set('traceparent', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');
    const replies = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        mux.request(echo, new TextEncoder().encode(`n${i}`), { timeout: 10_000, ...(i === 0 ? { headers: h } : {}) }),
      ),
    );
    expect(replies.map((m) => new TextDecoder().decode(m.data))).toEqual(
      Array.from({ length: 200 }, (_, i) => `n${i}`),
    );
    expect(replies[0]!.headers?.get('seen')).toBe('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');
    expect(replies[1]!.headers?.get('seen')).toBe('none');
    expect(mux.size).toBe(0);
  });

  it('requests made while others are out leave at the end of the turn, in order; flushQueued sends them before a later publish', async () => {
    const subject = `mcpx.test.order.${randomUUID()}`;
    const heard: string[] = [];
    const sub = responder.subscribe(`${subject}.>`, {
      callback: (_e, m) => {
        heard.push(new TextDecoder().decode(m.data));
        if (m.reply !== undefined && m.reply !== '') m.respond(m.data);
      },
    });
    await responder.flush();
    const mux = new RequestMux(nc);
    const enc = (t: string): Uint8Array => new TextEncoder().encode(t);
    const out = ['a', 'b', 'c'].map((t) => mux.request(`${subject}.call`, enc(t), { timeout: 10_000 }));
    // What a cancel does: the queued requests first, then its own publish, in the same turn.
    mux.flushQueued();
    nc.publish(`${subject}.cancel`, enc('cancel-c'));
    const replies = await Promise.all(out);
    await nc.flush();
    await responder.flush();
    expect(replies.map((m) => new TextDecoder().decode(m.data))).toEqual(['a', 'b', 'c']);
    expect(heard).toEqual(['a', 'b', 'c', 'cancel-c']);
    sub.unsubscribe();
    expect(mux.size).toBe(0);
  });

  it('nobody listening is no_responders, as nats.js raises it (a RequestError caused by the class)', async () => {
    const mux = new RequestMux(nc);
    const err = await failed(mux.request(`mcpx.test.${randomUUID()}`, new Uint8Array(), { timeout: 10_000 }));
    expect(err).toBeInstanceOf(errors.RequestError);
    expect((err as InstanceType<typeof errors.RequestError>).isNoResponders()).toBe(true);
    expect(natsFailure(err)).toBe(NatsFailures.noResponders);
    expect(mux.size).toBe(0);
  });

  it('a responder that never answers is a TimeoutError, and its late reply is dropped', async () => {
    const subject = `mcpx.test.${randomUUID()}`;
    let late: (() => void) | undefined;
    const sub = responder.subscribe(subject, {
      callback: (_e, m) => {
        late = () => void m.respond(new Uint8Array([1]));
      },
    });
    await responder.flush();
    const mux = new RequestMux(nc);
    const err = await failed(mux.request(subject, new Uint8Array(), { timeout: 200 }));
    expect(err).toBeInstanceOf(errors.TimeoutError);
    expect(natsFailure(err)).toBe(NatsFailures.timeout);
    late?.();
    await responder.flush();
    await nc.flush();
    sub.unsubscribe();
    expect(mux.size).toBe(0);
    // The mux still answers after a timed-out request.
    expect([...(await mux.request(echo, new Uint8Array([7]), { timeout: 10_000 })).data]).toEqual([7]);
  });

  it('closed before sending is closed; a request out when the connection closes fails, not hangs', async () => {
    const c = await connect({ servers: serviceUrls().nats, noAsyncTraces: true });
    const mux = new RequestMux(c);
    const subject = `mcpx.test.${randomUUID()}`;
    const sub = responder.subscribe(subject, { callback: () => {} });
    await responder.flush();
    const out = failed(mux.request(subject, new Uint8Array(), { timeout: 60_000 }));
    await c.flush();
    await c.close();
    const err = await out;
    expect(err).toBeInstanceOf(errors.RequestError);
    expect(natsFailure(err)).toBe(NatsFailures.lost);
    expect(natsFailure(await failed(mux.request(echo, new Uint8Array(), { timeout: 1_000 })))).toBe(
      NatsFailures.closed,
    );
    sub.unsubscribe();
  });

  it('uses the connection inbox prefix its user may subscribe to; a refused publish is refused, not a timeout', async () => {
    await using server = await NatsAuthServer.start();
    const c = await server.connectAs('runtime', { noAsyncTraces: true });
    try {
      const mux = new RequestMux(c);
      const subjects = makeSubjects(server.prefix);
      const none = await failed(mux.request(subjects.proxyCall, new Uint8Array(), { timeout: 30_000 }));
      expect(natsFailure(none)).toBe(NatsFailures.noResponders);
      const refused = await failed(
        mux.request(`mcpx.test.refused.${randomUUID()}`, new Uint8Array(), { timeout: 30_000 }),
      );
      expect(refused).toBeInstanceOf(errors.RequestError);
      expect(natsFailure(refused)).toBe(NatsFailures.refused);
      expect(mux.size).toBe(0);
    } finally {
      await c.close();
    }
  });
});
