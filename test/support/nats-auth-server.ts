import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type ConnectionOptions, type NatsConnection } from '@nats-io/transport-node';
import {
  NatsRoles,
  inboxPrefixOf,
  renderNatsServerConfig,
  type NatsCredentials,
  type NatsRole,
  type NatsUser,
} from '@mcpx/config';
import { freePort } from '../servers/free-port.js';

/** Where the machine's nats-server is (Debian's package); `NATS_SERVER_BIN` points elsewhere. */
export function natsServerBinary(): string {
  return process.env.NATS_SERVER_BIN ?? (existsSync('/usr/sbin/nats-server') ? '/usr/sbin/nats-server' : 'nats-server');
}

/**
 * A nats-server of a test's own, with JetStream in a temporary store and the project's
 * authorization (`renderNatsServerConfig`): one user per role, each with a random password.
 * `stop()` (or `await using`) stops it and removes the store.
 */
export class NatsAuthServer {
  private constructor(
    readonly url: string,
    readonly prefix: string,
    readonly users: Record<NatsRole, NatsUser & { password: string }>,
    private child: ChildProcess,
    private readonly dir: string,
    private readonly logFile: string,
  ) {}

  static async start(opts: { prefix?: string } = {}): Promise<NatsAuthServer> {
    const dir = await mkdtemp(join(tmpdir(), 'mcpx-nats-auth-'));
    const port = await freePort();
    const prefix = opts.prefix ?? '';
    const users = Object.fromEntries(
      NatsRoles.map((role) => [role, { user: role, password: randomBytes(24).toString('base64url'), role }]),
    ) as Record<NatsRole, NatsUser & { password: string }>;
    const configFile = join(dir, 'nats.conf');
    await writeFile(
      configFile,
      renderNatsServerConfig({
        users: Object.values(users),
        prefix,
        host: '127.0.0.1',
        port,
        storeDir: join(dir, 'js'),
      }),
      { mode: 0o600 },
    );
    const logFile = join(dir, 'nats.log');
    const child = spawn(natsServerBinary(), ['-c', configFile, '-l', logFile], { stdio: 'ignore' });
    const server = new NatsAuthServer(`nats://127.0.0.1:${port}`, prefix, users, child, dir, logFile);
    try {
      await server.waitReady(20_000);
    } catch (err) {
      await server.stop();
      throw err;
    }
    return server;
  }

  /** The credentials of a role, as `Config.natsCredentials` and nats.js options take them. */
  credentials(role: NatsRole): NatsCredentials {
    const u = this.users[role];
    return { user: u.user, pass: u.password, inboxPrefix: inboxPrefixOf(u.user) };
  }

  /** A service's environment: `NATS_URL`, `NATS_USER`, `NATS_PASSWORD`. */
  env(role: NatsRole): Record<string, string> {
    return { NATS_URL: this.url, NATS_USER: this.users[role].user, NATS_PASSWORD: this.users[role].password };
  }

  /** Connects as a role (with its inbox prefix unless `opts` says otherwise). */
  connectAs(role: NatsRole, opts: Partial<ConnectionOptions> = {}): Promise<NatsConnection> {
    return connect({
      servers: this.url,
      name: `test ${role}`,
      maxReconnectAttempts: 0,
      ...this.credentials(role),
      ...opts,
    });
  }

  /** The server's log so far (permission violations are logged there too). */
  async log(): Promise<string> {
    return await readFile(this.logFile, 'utf8').catch(() => '');
  }

  /**
   * Stops the server and starts it again on the same port with the same users (a restart):
   * `downMs` after it stopped, and once `whileDown` (a test's steps during the outage) is done.
   * JetStream's store stays.
   */
  async restart(downMs = 0, whileDown?: () => Promise<void>): Promise<void> {
    await this.halt();
    if (downMs > 0) await new Promise((r) => setTimeout(r, downMs));
    await whileDown?.();
    this.child = spawn(natsServerBinary(), ['-c', join(this.dir, 'nats.conf'), '-l', this.logFile], {
      stdio: 'ignore',
    });
    await this.waitReady(20_000);
  }

  async stop(): Promise<void> {
    await this.halt();
    await rm(this.dir, { recursive: true, force: true });
  }

  private async halt(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((r) => this.child.once('exit', r));
      this.child.kill('SIGTERM');
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  /** Ready once the operator can connect and JetStream answers. */
  private async waitReady(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last: unknown;
    while (Date.now() < deadline) {
      if (this.child.exitCode !== null)
        throw new Error(`nats-server exited (${this.child.exitCode}): ${await this.log()}`);
      try {
        const nc = await this.connectAs('operator');
        try {
          await nc.request('$JS.API.INFO', undefined, { timeout: 2_000 });
          return;
        } finally {
          await nc.close();
        }
      } catch (err) {
        last = err;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(
      `nats-server not ready in ${timeoutMs} ms: ${(last as Error | undefined)?.message ?? ''}\n${await this.log()}`,
    );
  }
}
