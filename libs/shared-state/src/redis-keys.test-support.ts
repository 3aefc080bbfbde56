import { randomBytes } from 'node:crypto';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll } from 'vitest';

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A connection to the real Redis for the enclosing `describe`, closed after its tests. */
export function suiteRedis(): Redis {
  const redis = new Redis(redisUrl);
  afterAll(async () => {
    await redis.quit();
  });
  return redis;
}

/** `n` creations started at once, each settled: what was created (in order) and why the others were refused. */
export async function race<T>(
  n: number,
  create: (i: number) => Promise<T>,
): Promise<{ created: T[]; refused: unknown[] }> {
  const raced = await Promise.allSettled(Array.from({ length: n }, (_, i) => create(i)));
  return {
    created: raced.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : [])),
    refused: raced.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : [])),
  };
}

/** A clock the test moves (no waiting) and a key prefix of the test's own. */
export function testClock(): { clock: { now: number }; prefix: string } {
  return { clock: { now: 1_700_000_000_000 }, prefix: `mcpx-t${randomBytes(4).toString('hex')}:` };
}

/** Every key under a prefix with its size (members of a set or hash, a string's length), to see that a refusal wrote nothing. */
export async function keysUnder(redis: Redis, prefix: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
    cursor = next;
    for (const key of keys) {
      const type = await redis.type(key);
      out[key] =
        type === 'zset' ? await redis.zcard(key) : type === 'hash' ? await redis.hlen(key) : await redis.strlen(key);
    }
  } while (cursor !== '0');
  return out;
}

/**
 * A TCP relay on loopback in front of the real Redis that the test makes stop answering:
 * `stall('requests')` drops every command on its way (nothing runs), `stall('replies')` lets the
 * commands run and drops their replies (a command that ran but whose answer was lost).
 * `resume()` resets the open connections (the client's queue of unanswered commands is failed
 * and it reconnects, as after a network that came back) and relays again.
 */
export interface StallingRedis {
  url: string;
  stall(what: 'requests' | 'replies'): void;
  resume(): void;
  close(): Promise<void>;
}

export async function startStallingRedis(): Promise<StallingRedis> {
  const target = new URL(redisUrl);
  const open = new Set<Socket>();
  let stalled: 'requests' | 'replies' | undefined;
  const server: Server = createServer((client) => {
    const upstream = connect({ host: target.hostname, port: Number(target.port || 6379) });
    for (const s of [client, upstream]) {
      open.add(s);
      s.on('close', () => open.delete(s));
      s.on('error', () => undefined);
    }
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.on('data', (d) => {
      if (stalled !== 'requests') upstream.write(d);
    });
    upstream.on('data', (d) => {
      if (stalled === undefined) client.write(d);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `redis://127.0.0.1:${port}`,
    stall: (what) => void (stalled = what),
    resume: () => {
      for (const s of open) s.destroy();
      stalled = undefined;
    },
    close: async () => {
      for (const s of open) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
