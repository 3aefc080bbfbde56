import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeSubjects } from '@mcpx/contracts';
import { freePort } from '../servers/index.js';
import { createTestDatabase, uniqueNamespace, type TestDatabase } from '../support/env.js';
import { ROOT, eventually } from '../support/system.js';

interface Started {
  child: ChildProcess;
  output: string[];
}

/**
 * `npm start`'s NATS (node scripts/run.mjs start, as the README runs it): a nats-server of its own
 * with the project's authorization, credentials generated once under the data folder (mode 0600),
 * its URL and the runtime's credentials printed; an anonymous client is refused, the runtime's
 * user may call but not forge events.
 */
describe('npm start runs NATS with auth', () => {
  let db: TestDatabase;
  let dataDir: string;
  let env: NodeJS.ProcessEnv;
  let natsPort: number;
  const running: Started[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    dataDir = mkdtempSync(join(tmpdir(), 'mcpx-start-data-'));
    natsPort = await freePort();
    const ns = uniqueNamespace();
    env = {
      ...process.env,
      NATS_URL: '',
      DATABASE_URL: db.url,
      NATS_PREFIX: ns.natsPrefix,
      REDIS_PREFIX: ns.redisPrefix,
      MCPX_DATA_DIR: dataDir,
      MCPX_NATS_PORT: String(natsPort),
      REGISTRY_PORT: String(await freePort()),
      PROJECTOR_PORT: String(await freePort()),
      PROXY_PORT: String(await freePort()),
      LOG_LEVEL: 'warn',
    };
  });

  afterAll(async () => {
    for (const r of running) if (r.child.exitCode === null) r.child.kill('SIGKILL');
    await db?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const start = async (): Promise<Started> => {
    const child = spawn(process.execPath, ['scripts/run.mjs', 'start'], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const started: Started = { child, output: [] };
    running.push(started);
    child.stdout?.on('data', (d: Buffer) => started.output.push(d.toString('utf8')));
    child.stderr?.on('data', (d: Buffer) => started.output.push(d.toString('utf8')));
    await eventually(
      async () => {
        if (child.exitCode !== null)
          throw new Error(`npm start exited (${child.exitCode}):\n${started.output.join('')}`);
        return started.output.join('').includes('API ready at') ? true : undefined;
      },
      120_000,
      'npm start to be ready',
    );
    return started;
  };

  const stop = async (s: Started): Promise<void> => {
    const exited = new Promise((r) => (s.child.exitCode !== null ? r(null) : s.child.once('exit', r)));
    s.child.kill('SIGTERM');
    await exited;
  };

  it('prints the NATS URL and the runtime’s credentials, refuses anonymous clients, keeps its passwords', async () => {
    const first = await start();
    const text = first.output.join('');
    const url = `nats://127.0.0.1:${natsPort}`;
    expect(text).toContain(`NATS at ${url}`);
    const credsFile = join(dataDir, 'nats-auth', 'runtime.json');
    expect(text).toContain(`the agent runtime's NATS credentials: `);
    expect(text).toContain('runtime.json');
    for (const f of ['runtime.json', 'users.json', 'nats.conf'])
      expect(statSync(join(dataDir, 'nats-auth', f)).mode & 0o777).toBe(0o600);
    const creds = JSON.parse(readFileSync(credsFile, 'utf8')) as {
      url: string;
      user: string;
      password: string;
      prefix: string;
    };
    expect(creds).toMatchObject({ url, user: 'runtime', prefix: env.NATS_PREFIX });
    // No password is printed.
    const users = JSON.parse(readFileSync(join(dataDir, 'nats-auth', 'users.json'), 'utf8')) as Record<string, string>;
    for (const password of Object.values(users)) expect(text).not.toContain(password);

    await expect(connect({ servers: url, maxReconnectAttempts: 0 })).rejects.toMatchObject({
      name: 'AuthorizationError',
    });
    const runtime = await connect({
      servers: url,
      user: creds.user,
      pass: creds.password,
      inboxPrefix: '_INBOX_runtime',
      maxReconnectAttempts: 0,
    });
    try {
      const subjects = makeSubjects(creds.prefix);
      const forged = subjects.serverDiscovered('acct', 'demo');
      await expect(runtime.request(forged, new Uint8Array(), { timeout: 5_000 })).rejects.toThrow(
        `Permissions Violation for Publish to "${forged}"`,
      );
      // The runtime reaches the proxy (its answer, not a permission error or silence).
      const reply = await runtime.request(subjects.proxyCall, new Uint8Array([0xa0]), { timeout: 10_000 });
      expect(reply.data.length).toBeGreaterThan(0);
    } finally {
      await runtime.close();
    }
    await stop(first);
    // Stopped with it: nothing answers on the port.
    await eventually(
      async () =>
        (await connect({ servers: url, maxReconnectAttempts: 0, user: 'runtime', pass: creds.password }).then(
          (nc) => nc.close().then(() => false),
          () => true,
        ))
          ? true
          : undefined,
      20_000,
      'NATS to stop',
    );

    // Generated once: a second start keeps the same users and passwords.
    const second = await start();
    expect(JSON.parse(readFileSync(join(dataDir, 'nats-auth', 'users.json'), 'utf8'))).toEqual(users);
    await stop(second);
  }, 300_000);
});
