import { createServer, type AddressInfo, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { isRedisUnavailable, REDIS_FAIL_FAST } from './redis-options.js';

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as AddressInfo;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

describe('REDIS_FAIL_FAST: a command fails at once and recognisably when Redis is out of reach (real Redis)', () => {
  const up = new Redis(redisUrl, { ...REDIS_FAIL_FAST, lazyConnect: true });
  afterAll(() => up.disconnect());

  it('a reply error of a command that ran is not an outage', async () => {
    await up.connect();
    const key = `mcpx-t${randomBytes(4).toString('hex')}:s`;
    await up.set(key, 'text', 'PX', 5_000);
    const err = await up.incr(key).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(isRedisUnavailable(err, up.status)).toBe(false);
  });

  it('a Redis that is not there: the command is refused within the bound, as an outage', async () => {
    const down = new Redis(`redis://127.0.0.1:${await closedPort()}`, { ...REDIS_FAIL_FAST, lazyConnect: true });
    down.on('error', () => undefined);
    await down.connect().catch(() => undefined);
    const started = performance.now();
    const err = await down.get('k').catch((e: unknown) => e);
    const ms = performance.now() - started;
    down.disconnect();
    expect(err).toBeInstanceOf(Error);
    expect(isRedisUnavailable(err, down.status)).toBe(true);
    // No queue behind reconnects: refused at once (a generous ceiling, not a timing test).
    expect(ms).toBeLessThan(5_000);
  });

  it('a Redis that accepts and never answers: the command fails within the bound, as an outage', async () => {
    // A server that accepts and never replies (a hung Redis, a black-holed network).
    const held: Socket[] = [];
    const silent = createServer((s) => held.push(s));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const port = (silent.address() as AddressInfo).port;
    // The connection is up (no ready check against a silent server), the command gets no answer.
    const hung = new Redis(`redis://127.0.0.1:${port}`, {
      ...REDIS_FAIL_FAST,
      lazyConnect: true,
      enableReadyCheck: false,
    });
    hung.on('error', () => undefined);
    // Its first exchange gets no answer either: the connection attempt ends at connectTimeout.
    await hung.connect().catch(() => undefined);
    const started = performance.now();
    const err = await hung.get('k').catch((e: unknown) => e);
    const ms = performance.now() - started;
    hung.disconnect();
    for (const s of held) s.destroy();
    await new Promise<void>((r) => silent.close(() => r()));
    expect(err).toBeInstanceOf(Error);
    expect(isRedisUnavailable(err, hung.status)).toBe(true);
    expect(ms).toBeLessThan(10_000);
  });

  it('anything else is not', () => {
    expect(isRedisUnavailable(new TypeError('x'), 'ready')).toBe(false);
    expect(isRedisUnavailable('Connection is closed.', 'end')).toBe(false);
    expect(isRedisUnavailable(new Error('boom'), 'ready')).toBe(false);
    expect(isRedisUnavailable(new Error('boom'), 'reconnecting')).toBe(true);
  });
});
