/**
 * `npm start` reuses the authenticated NATS of its data folder when another `npm start` already
 * runs it. One started by an older version may not know a user added since (the endpoint's): the
 * service on that user would be refused long after start-up said all was well. Start-up checks
 * every user and says which one the running NATS lacks.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { NatsRoles, renderNatsServerConfig, type NatsRole } from '@mcpx/config';
import { freePort } from '../servers/free-port.js';
import { natsServerBinary } from '../support/nats-auth-server.js';

/** The module under test lives in scripts/ (outside this project's rootDir): loaded by path, typed here. */
interface NatsAuthModule {
  startAuthNats: (opts: {
    host: string;
    port: number;
    prefix: string;
    dataDir: string;
    databaseUrl: string;
    redisUrl: string;
    log: (line: string) => void;
  }) => Promise<{ url: string; stopper: unknown }>;
}
const modulePath = fileURLToPath(new URL('../../scripts/deps/nats-auth.ts', import.meta.url));
const { startAuthNats } = (await import(modulePath)) as NatsAuthModule;

const children: ChildProcess[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const c of children.splice(0)) {
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGTERM');
    await exited;
  }
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

/** A data folder with this start's passwords, and a NATS on `port` that knows only `roles` of them. */
async function runningNats(roles: readonly NatsRole[]): Promise<{ dataDir: string; port: number }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'mcpx-start-stale-'));
  dirs.push(dataDir);
  const passwords = Object.fromEntries(NatsRoles.map((r) => [r, `${r}-password-of-this-folder`]));
  await mkdir(join(dataDir, 'nats-auth'), { recursive: true });
  await writeFile(join(dataDir, 'nats-auth', 'users.json'), JSON.stringify(passwords), { mode: 0o600 });
  const port = await freePort();
  const config = join(dataDir, 'old-nats.conf');
  const users = roles.map((role) => ({ user: role, role, password: passwords[role] as string }));
  await writeFile(
    config,
    renderNatsServerConfig({ users, prefix: '', host: '127.0.0.1', port, storeDir: join(dataDir, 'old-js') }),
  );
  const child = spawn(natsServerBinary(), ['-c', config], { stdio: 'ignore' });
  children.push(child);
  for (let i = 0; i < 100; i++) {
    const up = await new Promise<boolean>((done) => {
      const s = connect({ host: '127.0.0.1', port });
      s.once('connect', () => {
        s.destroy();
        done(true);
      });
      s.once('error', () => done(false));
    });
    if (up) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return { dataDir, port };
}

const start = (dataDir: string, port: number) =>
  startAuthNats({
    host: '127.0.0.1',
    port,
    prefix: '',
    dataDir,
    databaseUrl: 'postgres://unused',
    redisUrl: 'redis://unused',
    log: () => {},
  });

describe("npm start's reuse of a running NATS", () => {
  it('refuses one that lacks a user of this version, naming the user', async () => {
    const { dataDir, port } = await runningNats(NatsRoles.filter((r) => r !== 'endpoint'));
    await expect(start(dataDir, port)).rejects.toThrow(
      /does not know the user endpoint \(started by an older npm start\)/,
    );
  });

  it('uses one that knows every user, starting nothing', async () => {
    const { dataDir, port } = await runningNats(NatsRoles);
    const nats = await start(dataDir, port);
    expect(nats.url).toBe(`nats://127.0.0.1:${port}`);
    expect(nats.stopper).toBeUndefined();
  });
});
