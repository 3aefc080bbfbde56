import type { Redis } from 'ioredis';

/**
 * Lua pieces shared by the Redis scripts of the limiters (`CallLimiter`, `RateLimiter`), so the
 * two buckets refill by one rule.
 *
 * - `REDIS_NOW_MS`: `now`, milliseconds by the Redis clock (instances with skewed clocks agree).
 * - `REFILL_BUCKET`: `refill(key, rate, burst, now)`, the tokens a bucket hash `{t, ts}` holds
 *   now: a missing bucket is full; it refills at `rate` per second up to `burst`.
 * - `SAVE_BUCKET`: `save(key, t, rate, burst, now)`, writes the bucket back and lets it expire
 *   once it would be full again.
 */
export const REDIS_NOW_MS = `
local tm = redis.call('TIME')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
`;

export const REFILL_BUCKET = `
local function refill(key, rate, burst, now)
  local h = redis.call('HMGET', key, 't', 'ts')
  local t = tonumber(h[1])
  local ts = tonumber(h[2])
  if t == nil or ts == nil then
    return burst
  end
  return math.min(burst, t + math.max(0, now - ts) * rate / 1000)
end
local function save(key, t, rate, burst, now)
  redis.call('HSET', key, 't', tostring(t), 'ts', tostring(now))
  redis.call('PEXPIRE', key, math.ceil(burst * 1000 / rate) + 1000)
end
`;

/** A Lua command to define on a client: how many of its arguments are keys, and its script. */
export interface LuaCommand {
  keys: number;
  lua: string;
}

/**
 * The client with `commands` defined on it (each once: a client shared by several limiters, or
 * handed to a second one, keeps the first definition), typed as `T`, the client plus the
 * commands' methods.
 */
export function withCommands<T>(redis: Redis, commands: Record<string, LuaCommand>): T {
  const defined = redis as unknown as Record<string, unknown>;
  for (const [name, command] of Object.entries(commands)) {
    if (typeof defined[name] !== 'function')
      redis.defineCommand(name, { numberOfKeys: command.keys, lua: command.lua });
  }
  return redis as unknown as T;
}
