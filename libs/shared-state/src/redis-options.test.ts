import { createServer, type AddressInfo, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import {
  FailFastRedis,
  REDIS_FAIL_FAST,
  RedisUnavailableError,
  isRedisUnavailable,
  replyCode,
} from './redis-options.js';

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as AddressInfo;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

describe('FailFastRedis: a command fails at once and typed when Redis is out of reach (real Redis)', () => {
  const up = new FailFastRedis(redisUrl);
  afterAll(() => up.disconnect());

  it('a reply error of a command that ran is not an outage', async () => {
    await up.connect();
    const key = `mcpx-t${randomBytes(4).toString('hex')}:s`;
    await up.set(key, 'text', 'PX', 5_000);
    const err = await up.incr(key).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err).not.toBeInstanceOf(RedisUnavailableError);
    expect(replyCode(err)).toBe('ERR');
    expect(isRedisUnavailable(err)).toBe(false);
    const wrongType = await up.lpush(key, 'x').catch((e: unknown) => e);
    expect(replyCode(wrongType)).toBe('WRONGTYPE');
    expect(isRedisUnavailable(wrongType)).toBe(false);
  });

  it('a client whose connection was closed: the command fails typed, not by its words', async () => {
    const closing = new FailFastRedis(redisUrl);
    await closing.connect();
    closing.disconnect();
    const err = await closing.get('k').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RedisUnavailableError);
    expect(isRedisUnavailable(err)).toBe(true);
  });

  it('a Redis that is not there: the command is refused within the bound, as an outage', async () => {
    const down = new FailFastRedis(`redis://127.0.0.1:${await closedPort()}`);
    down.on('error', () => undefined);
    await down.connect().catch(() => undefined);
    const started = performance.now();
    const err = await down.get('k').catch((e: unknown) => e);
    const ms = performance.now() - started;
    down.disconnect();
    expect(err).toBeInstanceOf(RedisUnavailableError);
    expect(isRedisUnavailable(err)).toBe(true);
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
    const hung = new FailFastRedis(`redis://127.0.0.1:${port}`, { ...REDIS_FAIL_FAST, enableReadyCheck: false });
    hung.on('error', () => undefined);
    // Its first exchange gets no answer either: the connection attempt ends at connectTimeout.
    await hung.connect().catch(() => undefined);
    const started = performance.now();
    const err = await hung.get('k').catch((e: unknown) => e);
    const ms = performance.now() - started;
    hung.disconnect();
    for (const s of held) s.destroy();
    await new Promise<void>((r) => silent.close(() => r()));
    expect(err).toBeInstanceOf(RedisUnavailableError);
    expect(isRedisUnavailable(err)).toBe(true);
    expect(ms).toBeLessThan(10_000);
  });

  it("anything else is not, whatever its words: an error of the caller's own that reads like the client's", () => {
    expect(isRedisUnavailable(new TypeError('x'))).toBe(false);
    expect(isRedisUnavailable('Connection is closed.')).toBe(false);
    expect(isRedisUnavailable(new Error('Connection is closed.'))).toBe(false);
    expect(isRedisUnavailable(new Error('OOM command not allowed when used memory > maxmemory'))).toBe(false);
    expect(replyCode(new Error('OOM command not allowed'))).toBeUndefined();
  });
});
