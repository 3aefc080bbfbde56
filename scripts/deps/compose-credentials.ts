// The passwords of the compose file's Postgres and Redis when `npm start` falls back to Docker.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Where the generated passwords are kept (mode 0600): a Postgres volume keeps its first password. */
export const COMPOSE_CREDENTIALS_FILE = 'compose-credentials.json';

export interface ComposeCredentials {
  /** The compose file's variables: POSTGRES_PASSWORD, REDIS_PASSWORD. */
  env: { POSTGRES_PASSWORD: string; REDIS_PASSWORD: string };
  /** The configured URLs with those passwords in them (what the services must connect with). */
  databaseUrl: string;
  redisUrl: string;
}

/** Hex: the compose file puts the passwords into URLs, where hex needs no escaping. */
function newPassword(): string {
  return randomBytes(24).toString('hex');
}

function readKept(file: string): Partial<ComposeCredentials['env']> {
  if (!existsSync(file)) return {};
  const parsed = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  const pick = (k: string): string | undefined =>
    typeof parsed[k] === 'string' && /^[0-9a-f]{16,128}$/.test(parsed[k]) ? parsed[k] : undefined;
  const out: Partial<ComposeCredentials['env']> = {};
  const pg = pick('POSTGRES_PASSWORD');
  const redis = pick('REDIS_PASSWORD');
  if (pg !== undefined) out.POSTGRES_PASSWORD = pg;
  if (redis !== undefined) out.REDIS_PASSWORD = redis;
  return out;
}

/**
 * The compose file refuses to start Postgres or Redis without a password. A password the
 * configured URL carries is used as is (the operator chose it), then one set in the environment
 * (POSTGRES_PASSWORD, REDIS_PASSWORD); otherwise one is generated once
 * and kept under the data folder, so that a restart meets the volume's password again. The URLs
 * returned carry the passwords: the services started beside the containers connect with them.
 */
export function composeCredentials(
  opts: { databaseUrl: string; redisUrl: string; dataDir: string },
  processEnv: NodeJS.ProcessEnv = process.env,
): ComposeCredentials {
  const file = join(opts.dataDir, COMPOSE_CREDENTIALS_FILE);
  const kept = readKept(file);
  const database = new URL(opts.databaseUrl);
  const redis = new URL(opts.redisUrl);
  const given = (url: URL, name: 'POSTGRES_PASSWORD' | 'REDIS_PASSWORD'): string | undefined => {
    if (url.password !== '') return decodeURIComponent(url.password);
    const fromEnv = processEnv[name];
    return fromEnv !== undefined && fromEnv !== '' ? fromEnv : undefined;
  };
  const givenPg = given(database, 'POSTGRES_PASSWORD');
  const givenRedis = given(redis, 'REDIS_PASSWORD');
  const env = {
    POSTGRES_PASSWORD: givenPg ?? kept.POSTGRES_PASSWORD ?? newPassword(),
    REDIS_PASSWORD: givenRedis ?? kept.REDIS_PASSWORD ?? newPassword(),
  };
  // Only generated passwords are kept (a given one stays where the operator keeps it).
  const toKeep: Partial<ComposeCredentials['env']> = { ...kept };
  if (givenPg === undefined) toKeep.POSTGRES_PASSWORD = env.POSTGRES_PASSWORD;
  if (givenRedis === undefined) toKeep.REDIS_PASSWORD = env.REDIS_PASSWORD;
  if (JSON.stringify(toKeep) !== JSON.stringify(kept)) {
    mkdirSync(opts.dataDir, { recursive: true });
    writeFileSync(file, `${JSON.stringify(toKeep, null, 2)}\n`, { mode: 0o600 });
  }
  // The compose file's Postgres superuser is `postgres`; its Redis has only the default user.
  if (database.username === '') database.username = 'postgres';
  database.password = encodeURIComponent(env.POSTGRES_PASSWORD);
  redis.username = '';
  redis.password = encodeURIComponent(env.REDIS_PASSWORD);
  return { env, databaseUrl: database.toString(), redisUrl: redis.toString() };
}
