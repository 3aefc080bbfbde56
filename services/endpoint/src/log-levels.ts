import { listen, notify, payload } from '@mcpx/bus';
import { decodeClientLogLevel, isLogLevel, type ClientLogLevel, type LogLevel } from '@mcpx/contracts';
import type { Subscription } from '@nats-io/transport-node';
import type { SharedTokenStateDeps } from './shared-token-state.js';

/** A level set is kept this long in Redis after it was set. */
const LEVEL_TTL_S = 24 * 60 * 60;
/** Tokens whose levels an instance keeps in memory (the oldest forgotten past it, read again from Redis). */
const MAX_REMEMBERED = 50_000;

export type LogLevelsDeps = SharedTokenStateDeps;

/**
 * The log level each token's 2025 client set with `logging/setLevel` (docs/endpoint.md#logging).
 * The endpoint serves that revision without sessions, so the level is the token's: its calls on
 * any face ask their servers for log messages at that level, until it is set again (kept 24 h).
 * As what a 2025 client declared (./legacy-clients.ts), it holds whichever instance a balancer
 * sends each POST to: written to Redis before `logging/setLevel` is answered, announced to the
 * other instances, read from Redis by an instance that does not know the token yet. A 2026-07-28
 * client's level travels in each request's `_meta` instead and is never kept.
 */
export class LogLevels {
  /** By token id; `null`: known to have set none. */
  private readonly known = new Map<string, LogLevel | null>();
  private sub: Subscription | undefined;

  constructor(private readonly deps: LogLevelsDeps) {}

  /** Starts hearing the levels set through the other instances. */
  listen(): void {
    const { nc, subjects, instance, log } = this.deps;
    this.sub = listen(
      nc,
      subjects.endpointClientsLogLevel,
      payload(decodeClientLogLevel),
      (m) => {
        if (m.instance !== instance) this.keep(m.token, m.level);
      },
      { what: 'log level of a 2025 client', log },
    );
  }

  /** The level the token's client set, or undefined (a memory hit costs no await). */
  get(tokenId: string): LogLevel | undefined | Promise<LogLevel | undefined> {
    const hit = this.known.get(tokenId);
    if (hit !== undefined) return hit ?? undefined;
    return this.read(tokenId);
  }

  /** Records the level a token's client set, here, in Redis and for the other instances. */
  async set(tokenId: string, level: LogLevel): Promise<void> {
    this.keep(tokenId, level);
    try {
      await this.deps.redis.set(this.key(tokenId), level, 'EX', LEVEL_TTL_S);
    } catch (err) {
      this.deps.log.warn('log level of a 2025 client not shared through redis', { err: err as Error });
    }
    notify<ClientLogLevel>(this.deps.nc, this.deps.subjects.endpointClientsLogLevel, {
      instance: this.deps.instance,
      token: tokenId,
      level,
    });
  }

  close(): void {
    this.sub?.unsubscribe();
    this.sub = undefined;
  }

  private async read(tokenId: string): Promise<LogLevel | undefined> {
    let found: LogLevel | null = null;
    try {
      const raw = await this.deps.redis.get(this.key(tokenId));
      if (isLogLevel(raw)) found = raw;
    } catch (err) {
      // Redis unreachable: the call goes on without the server's logs (not kept: asked again next time).
      this.deps.log.warn('log level of a 2025 client not read', { err: err as Error });
      return undefined;
    }
    this.keep(tokenId, found);
    return found ?? undefined;
  }

  private keep(tokenId: string, level: LogLevel | null): void {
    this.known.delete(tokenId);
    this.known.set(tokenId, level);
    if (this.known.size > MAX_REMEMBERED) this.known.delete(this.known.keys().next().value as string);
  }

  private key(tokenId: string): string {
    return `${this.deps.redisPrefix}endpoint:log-level:${tokenId}`;
  }
}
