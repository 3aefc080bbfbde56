import type { Redis } from 'ioredis';

/** What a Redis says of its memory bound: `maxmemory` (bytes, 0 = none) and its policy. */
export interface RedisMemorySettings {
  maxmemory: number;
  policy: string;
}

/**
 * Reads the memory bound of a Redis from `INFO memory` (allowed on managed services that refuse
 * `CONFIG GET`); undefined when it does not say.
 */
export async function redisMemorySettings(redis: Redis): Promise<RedisMemorySettings | undefined> {
  const info = await redis.info('memory');
  const max = /^maxmemory:(\d+)\r?$/m.exec(info)?.[1];
  const policy = /^maxmemory_policy:([a-z-]+)\r?$/m.exec(info)?.[1];
  return max === undefined || policy === undefined ? undefined : { maxmemory: Number(max), policy };
}

/**
 * What is wrong with a Redis's memory bound for this connector, one sentence each: no
 * `maxmemory` (it grows until the host runs out), or a policy that evicts (approvals, answers,
 * nonces and limits could vanish without a word; a lost nonce is a replay window). Empty when it
 * is bounded and evicts nothing.
 */
export function redisMemoryProblems(s: RedisMemorySettings): string[] {
  const out: string[] = [];
  if (s.maxmemory === 0)
    out.push('redis has no maxmemory: it grows until the host runs out (set maxmemory, e.g. 256mb)');
  if (s.policy !== 'noeviction')
    out.push(
      `redis evicts keys (maxmemory-policy ${s.policy}): approvals, answers, nonces and limits could vanish silently (set noeviction)`,
    );
  return out;
}
