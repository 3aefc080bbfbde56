import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../servers/index.js';
import { createTestDatabase, uniqueNamespace, type TestDatabase } from '../support/env.js';
import { ROOT, eventually } from '../support/system.js';

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Whether something accepts TCP connections on the loopback port (the command's own NATS). */
const portAnswers = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.setTimeout(2_000, () => socket.destroy());
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('close', () => resolve(false));
  });

const answers = async (url: string): Promise<boolean> => (await fetch(url).catch(() => undefined))?.ok === true;

/**
 * The README's start command (`npm start` → `node scripts/run.mjs start`): everything comes up (the
 * API, the console, the projector and the proxy), and when whatever started it dies without passing
 * a signal on (npm does not forward a SIGTERM sent to it alone), everything stops. It runs its own
 * NATS on a free port with a temporary data folder, so it never meets a developer's `npm start`
 * (NATS on 4223, `.data/`) or another run of this test.
 */
describe('the start command', () => {
  let db: TestDatabase;
  let ports: { registry: number; projector: number; proxy: number; nats: number; auth: number };
  let dataDir: string;
  const pids: number[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    ports = {
      registry: await freePort(),
      projector: await freePort(),
      proxy: await freePort(),
      nats: await freePort(),
      auth: await freePort(),
    };
    dataDir = mkdtempSync(join(tmpdir(), 'mcpx-start-'));
  });

  afterAll(async () => {
    // A failed run leaves the command up: ask it to stop its services before anything is killed.
    for (const pid of pids.slice().reverse()) if (alive(pid)) process.kill(pid, 'SIGTERM');
    await eventually(
      async () => (pids.every((pid) => !alive(pid)) ? true : undefined),
      20_000,
      'the start command to stop',
    ).catch(() => undefined);
    for (const pid of pids) if (alive(pid)) process.kill(pid, 'SIGKILL');
    await db?.drop();
    if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
  });

  it('serves the API and the console, and stops everything once its parent is gone', async () => {
    const ns = uniqueNamespace();
    // No NATS_URL: the command starts its own NATS (with its users) on MCPX_NATS_PORT.
    const { NATS_URL: _url, NATS_USER: _user, NATS_PASSWORD: _password, ...inherited } = process.env;
    const env = {
      ...inherited,
      MCPX_NATS_PORT: String(ports.nats),
      MCPX_DATA_DIR: dataDir,
      DATABASE_URL: db.url,
      NATS_PREFIX: ns.natsPrefix,
      REDIS_PREFIX: ns.redisPrefix,
      REGISTRY_PORT: String(ports.registry),
      PROJECTOR_PORT: String(ports.projector),
      PROXY_PORT: String(ports.proxy),
      AUTHORIZATION_SERVER_PORT: String(ports.auth),
      LOG_LEVEL: 'warn',
    };
    // Stands in for npm: starts the command, prints its pid, and is then killed without a word.
    const parent = spawn(
      process.execPath,
      [
        '-e',
        "const c = require('node:child_process').spawn(process.execPath, ['scripts/run.mjs', 'start'], { stdio: 'ignore' }); console.log(c.pid); setInterval(() => {}, 1000);",
      ],
      { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const runPid = await new Promise<number>((resolve) =>
      parent.stdout.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))),
    );
    pids.push(parent.pid!, runPid);

    const base = `http://127.0.0.1:${ports.registry}`;
    await eventually(
      async () =>
        (await answers(`${base}/healthz`)) && (await answers(`http://127.0.0.1:${ports.proxy}/healthz`))
          ? true
          : undefined,
      90_000,
      'everything up',
    );
    expect(await answers(`http://127.0.0.1:${ports.projector}/healthz`)).toBe(true);
    expect(await (await fetch(`${base}/console/`)).text()).toContain('<!doctype html>');
    expect(await portAnswers(ports.nats)).toBe(true);
    // The endpoint's authorization server: its own process and port, the issuer it is told.
    const issuer = `http://127.0.0.1:${ports.auth}`;
    const meta = await eventually(async () => {
      const res = await fetch(`${issuer}/.well-known/oauth-authorization-server`).catch(() => undefined);
      return res?.ok === true ? ((await res.json()) as { issuer: string }) : undefined;
    }, 60_000);
    expect(meta.issuer).toBe(issuer);
    expect((await fetch(`${base}/.well-known/oauth-authorization-server`)).status).toBe(404);

    parent.kill('SIGKILL');
    await eventually(
      async () =>
        !alive(runPid) &&
        !(await answers(`${base}/healthz`)) &&
        !(await answers(`http://127.0.0.1:${ports.proxy}/healthz`)) &&
        !(await answers(`http://127.0.0.1:${ports.auth}/healthz`)) &&
        !(await portAnswers(ports.nats))
          ? true
          : undefined,
      30_000,
      'everything stopped',
    );
  }, 210_000);
});
