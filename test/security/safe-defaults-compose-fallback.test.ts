/**
 * `npm start`'s Docker fallback: the compose file refuses to start Postgres
 * and Redis without passwords, so the fallback must supply them, and the services it starts must
 * connect with the same ones. No Docker engine runs here: the credentials it would hand to
 * `docker compose` and to the services are checked, and that they are kept for the next start
 * (a Postgres volume keeps its first password).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

/** The module under test lives in scripts/ (outside this project's rootDir): loaded by path, typed here. */
interface ComposeCredentialsModule {
  COMPOSE_CREDENTIALS_FILE: string;
  composeCredentials: (
    opts: { databaseUrl: string; redisUrl: string; dataDir: string },
    processEnv?: NodeJS.ProcessEnv,
  ) => { env: { POSTGRES_PASSWORD: string; REDIS_PASSWORD: string }; databaseUrl: string; redisUrl: string };
}
const modulePath = fileURLToPath(new URL('../../scripts/deps/compose-credentials.ts', import.meta.url));
const { COMPOSE_CREDENTIALS_FILE, composeCredentials } = (await import(modulePath)) as ComposeCredentialsModule;

describe("npm start's Docker fallback has the compose file's passwords", () => {
  const dirs: string[] = [];
  const dataDir = (): string => {
    const d = mkdtempSync(join(tmpdir(), 'mcpx-compose-'));
    dirs.push(d);
    return d;
  };
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  const urls = { databaseUrl: 'postgres://postgres@127.0.0.1:5432/mcpx', redisUrl: 'redis://127.0.0.1:6379' };

  it('generates passwords once, keeps them (0600) for the next start, and puts them into the URLs the services use', () => {
    const dir = dataDir();
    const first = composeCredentials({ ...urls, dataDir: dir }, {});
    expect(first.env.POSTGRES_PASSWORD).toMatch(/^[0-9a-f]{48}$/);
    expect(first.env.REDIS_PASSWORD).toMatch(/^[0-9a-f]{48}$/);
    expect(first.env.POSTGRES_PASSWORD).not.toBe(first.env.REDIS_PASSWORD);
    expect(new URL(first.databaseUrl).password).toBe(first.env.POSTGRES_PASSWORD);
    expect(new URL(first.databaseUrl).username).toBe('postgres');
    expect(new URL(first.databaseUrl).pathname).toBe('/mcpx');
    expect(new URL(first.redisUrl).password).toBe(first.env.REDIS_PASSWORD);
    const file = join(dir, COMPOSE_CREDENTIALS_FILE);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(first.env);
    // The next start meets the volume with the same password.
    expect(composeCredentials({ ...urls, dataDir: dir }, {})).toEqual(first);
  });

  it('a password the URL or the environment gives is used and not written down', () => {
    const dir = dataDir();
    const given = composeCredentials(
      { databaseUrl: 'postgres://app:s3cr%40t@127.0.0.1:5433/mcpx', redisUrl: 'redis://127.0.0.1:6380', dataDir: dir },
      { REDIS_PASSWORD: 'from-env' },
    );
    expect(given.env).toEqual({ POSTGRES_PASSWORD: 's3cr@t', REDIS_PASSWORD: 'from-env' });
    expect(given.databaseUrl).toBe('postgres://app:s3cr%40t@127.0.0.1:5433/mcpx');
    expect(new URL(given.redisUrl).password).toBe('from-env');
    expect(existsSync(join(dir, COMPOSE_CREDENTIALS_FILE))).toBe(false);
  });

  it('a kept file that was tampered with is not trusted for a value it cannot hold', () => {
    const dir = dataDir();
    const first = composeCredentials({ ...urls, dataDir: dir }, {});
    const file = join(dir, COMPOSE_CREDENTIALS_FILE);
    // A value that would break out of the URL is replaced by a new password.
    rmSync(file);
    writeFileSync(file, JSON.stringify({ POSTGRES_PASSWORD: 'x@evil:1/', REDIS_PASSWORD: first.env.REDIS_PASSWORD }));
    const next = composeCredentials({ ...urls, dataDir: dir }, {});
    expect(next.env.POSTGRES_PASSWORD).toMatch(/^[0-9a-f]{48}$/);
    expect(next.env.REDIS_PASSWORD).toBe(first.env.REDIS_PASSWORD);
    expect(new URL(next.databaseUrl).host).toBe('127.0.0.1:5432');
  });
});
