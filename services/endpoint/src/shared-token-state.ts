import type { Subjects } from '@mcpx/contracts';
import type { Logger } from '@mcpx/log';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Redis } from 'ioredis';

/**
 * What a token's state that every endpoint instance must see needs (what its 2025 client declared,
 * the log level it set): the endpoint serves 2025 clients without sessions, so each POST may reach
 * another instance. The state is written to Redis (under `redisPrefix`), announced to the other
 * instances on NATS (this instance named `instance`, a subject token), and read from Redis by an
 * instance that does not know the token yet.
 */
export interface SharedTokenStateDeps {
  nc: NatsConnection;
  subjects: Subjects;
  /** This instance's id as a subject token. */
  instance: string;
  redis: Redis;
  redisPrefix: string;
  log: Logger;
}
