import { randomUUID } from 'node:crypto';
import { connect, errors, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NatsFailures, WireError, makeSubjects, natsFailure } from '@mcpx/contracts';
import { ProxyClient } from '@mcpx/proxy-client';
import { freePort } from '../servers/index.js';
import { serviceUrls } from '../support/env.js';
import { NatsAuthServer } from '../support/nats-auth-server.js';

/**
 * NATS failures are told apart once, by nats.js v3's own classes (`natsFailure` of the
 * contracts), and the proxy's client turns each into a typed error: against the real NATS server
 * (and one of the test's own for a refused user), never a fake.
 */
describe('natsFailure: by nats.js class', () => {
  let nc: NatsConnection;

  beforeAll(async () => {
    nc = await connect({ servers: serviceUrls().nats, name: 'nats-failures test' });
  });

  afterAll(async () => {
    await nc?.close();
  });

  async function failed(p: Promise<unknown>): Promise<unknown> {
    return await p.then(
      () => new Error('it succeeded'),
      (e: unknown) => e,
    );
  }

  it('a request nobody listens for is no_responders (a RequestError whose cause is the class)', async () => {
    const err = await failed(nc.request(`mcpx.test.${randomUUID()}`, new Uint8Array(), { timeout: 5_000 }));
    expect(err).toBeInstanceOf(errors.RequestError);
    expect(natsFailure(err)).toBe(NatsFailures.noResponders);
  });

  it('a responder that never answers is a timeout', async () => {
    const subject = `mcpx.test.${randomUUID()}`;
    const sub = nc.subscribe(subject, { callback: () => {} });
    await nc.flush();
    const err = await failed(nc.request(subject, new Uint8Array(), { timeout: 200 }));
    sub.unsubscribe();
    expect(natsFailure(err)).toBe(NatsFailures.timeout);
  });

  it('a request on a closed connection is closed; a server that does not listen is unreachable', async () => {
    const closing = await connect({ servers: serviceUrls().nats });
    await closing.close();
    expect(natsFailure(await failed(closing.request('mcpx.test.closed', new Uint8Array(), { timeout: 1_000 })))).toBe(
      NatsFailures.closed,
    );
    const port = await freePort();
    expect(
      natsFailure(await failed(connect({ servers: `nats://127.0.0.1:${port}`, reconnect: false, timeout: 2_000 }))),
    ).toBe(NatsFailures.unreachable);
  });

  it('a refused user is refused', async () => {
    await using server = await NatsAuthServer.start();
    const err = await failed(
      connect({ servers: server.url, user: 'runtime', pass: 'not-the-password', reconnect: false }),
    );
    expect(natsFailure(err)).toBe(NatsFailures.refused);
  });

  it('is undefined for what is not a NATS error, even with NATS words in its message', () => {
    expect(natsFailure(new Error("no responders: 'x'"))).toBeUndefined();
    expect(natsFailure(Object.assign(new Error('timeout'), { name: 'TimeoutError' }))).toBeUndefined();
    expect(natsFailure('no responders')).toBeUndefined();
  });
});

describe('the proxy client: each NATS failure typed', () => {
  let nc: NatsConnection;
  let client: ProxyClient;
  const subjects = makeSubjects(`t${randomUUID().slice(0, 8)}.`);
  const call = (c: ProxyClient, timeoutMs?: number): Promise<unknown> =>
    c
      .call({
        account: 'acct',
        agent: 'a',
        run: 'r',
        tool: 'x__y',
        arguments: {},
        ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      })
      .then(
        () => new Error('a call succeeded with no proxy'),
        (e: unknown) => e,
      );

  beforeAll(async () => {
    nc = await connect({ servers: serviceUrls().nats, name: 'nats-failures proxy client' });
    client = new ProxyClient(nc, subjects, { liveness: { afterMs: 0, everyMs: 0, answerMs: 0, misses: 0 } });
  });

  afterAll(async () => {
    await nc?.close();
  });

  it('no proxy instance: transport_error, retryable, nothing ran', async () => {
    const err = await call(client);
    expect(err).toBeInstanceOf(WireError);
    expect(err).toMatchObject({ code: 'transport_error', retryable: true, mayHaveRun: false });
  });

  it('a proxy that takes the call and never answers: timeout, may have run, not retryable', async () => {
    const sub = nc.subscribe(subjects.proxyCall, { callback: () => {} });
    await nc.flush();
    const err = await call(client, 100);
    sub.unsubscribe();
    expect(err).toBeInstanceOf(WireError);
    expect(err).toMatchObject({ code: 'timeout', retryable: false, mayHaveRun: true });
  });

  it('a closed connection: transport_error, the call was not sent', async () => {
    const closed = await connect({ servers: serviceUrls().nats });
    await closed.close();
    const err = await call(
      new ProxyClient(closed, subjects, { liveness: { afterMs: 0, everyMs: 0, answerMs: 0, misses: 0 } }),
    );
    expect(err).toBeInstanceOf(WireError);
    expect(err).toMatchObject({ code: 'transport_error', retryable: true, mayHaveRun: false });
  });
});
