// `npm start`'s own NATS: a nats-server with the project's authorization (one user per service,
// the agent runtime and an operator; see libs/config/src/nats-permissions.ts), JetStream in the
// data folder, passwords generated once and kept there with mode 0600.
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { connect as tcpConnect } from 'node:net';
import { join } from 'node:path';
// The start script has no package dependencies of its own: it takes the pure permission model
// from the config library's source (no I/O, no imports of its own but its sibling).
import { renderNatsServerConfig, type NatsRole } from '../../libs/config/src/nats-permissions.js';
import { NATS_PASSWORD_ENV } from '../../libs/config/src/nats-deploy-config.js';
import { dockerComposeCommand, startWithCompose } from './compose.js';
import { startChild } from './local.js';
import { findOnPath, tcpReachable } from './process.js';
import type { Endpoint, EnsureDependenciesOptions, Stopper } from './types.js';

const ROLES: readonly NatsRole[] = ['registry', 'projector', 'proxy', 'endpoint', 'runtime', 'operator'];

export interface AuthNats {
  url: string;
  /** Each role's user and password. */
  users: Record<NatsRole, { user: string; password: string }>;
  /** The runtime's credentials file (JSON `{url, user, password, prefix}`, mode 0600). */
  runtimeCredentialsFile: string;
  /** What was started; undefined when none was. */
  stopper: Stopper | undefined;
}

export interface AuthNatsOptions extends EnsureDependenciesOptions {
  host: string;
  port: number;
  /** The stack's namespace prefix (`NATS_PREFIX`): the permissions name its subjects. */
  prefix: string;
}

async function writeSecretFile(path: string, text: string): Promise<void> {
  await writeFile(path, text, { mode: 0o600 });
  await chmod(path, 0o600);
}

/** The users' passwords: read from `users.json`, or generated once (24 random bytes each) and kept. */
async function loadOrCreatePasswords(dir: string): Promise<Record<NatsRole, string>> {
  const file = join(dir, 'users.json');
  const known: Partial<Record<NatsRole, unknown>> = await readFile(file, 'utf8').then(
    (t) => JSON.parse(t) as Partial<Record<NatsRole, unknown>>,
    () => ({}),
  );
  const out = {} as Record<NatsRole, string>;
  let changed = false;
  for (const role of ROLES) {
    const given = known[role];
    if (typeof given === 'string' && given.length >= 16) out[role] = given;
    else {
      out[role] = randomBytes(24).toString('base64url');
      changed = true;
    }
  }
  if (changed) await writeSecretFile(file, JSON.stringify(out, null, 2) + '\n');
  return out;
}

/**
 * Whether a NATS server answers at host:port and takes `user`/`pass`: the protocol's own
 * handshake (INFO, CONNECT, PING → PONG or -ERR), so no client library is needed here.
 */
export function natsAccepts(
  host: string,
  port: number,
  user: string,
  pass: string,
  timeoutMs = 3_000,
): Promise<boolean> {
  return new Promise((done) => {
    const socket = tcpConnect({ host, port });
    let buffer = '';
    let sent = false;
    const finish = (ok: boolean): void => {
      socket.destroy();
      done(ok);
    };
    socket.setTimeout(timeoutMs, () => finish(false));
    socket.once('error', () => finish(false));
    socket.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8');
      if (!sent && buffer.includes('\r\n')) {
        sent = true;
        socket.write(
          `CONNECT ${JSON.stringify({ user, pass, verbose: false, pedantic: false, protocol: 1 })}\r\nPING\r\n`,
        );
        buffer = buffer.slice(buffer.indexOf('\r\n') + 2);
      }
      if (sent && buffer.includes('PONG')) finish(true);
      else if (sent && buffer.includes('-ERR')) finish(false);
    });
  });
}

/**
 * Brings up the stack's authenticated NATS: writes `nats.conf` (mode 0600) under
 * `<dataDir>/nats-auth` for the current users and prefix, then starts the local nats-server with
 * it (JetStream in `<dataDir>/nats`), else the compose file's `nats` service (the same
 * permissions, passwords passed in its environment). A NATS already answering on the port with
 * these credentials (another `npm start` of this data folder) is used as it is.
 */
export async function startAuthNats(opts: AuthNatsOptions): Promise<AuthNats> {
  const dir = join(opts.dataDir, 'nats-auth');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  const passwords = await loadOrCreatePasswords(dir);
  const users = Object.fromEntries(
    ROLES.map((role) => [role, { user: role, password: passwords[role] }]),
  ) as AuthNats['users'];
  const url = `nats://${opts.host}:${opts.port}`;
  const runtimeCredentialsFile = join(dir, 'runtime.json');
  await writeSecretFile(
    runtimeCredentialsFile,
    JSON.stringify({ url, user: users.runtime.user, password: users.runtime.password, prefix: opts.prefix }, null, 2) +
      '\n',
  );
  const endpoint: Endpoint = { name: 'nats', label: 'NATS (auth)', host: opts.host, port: opts.port, shownUrl: url };

  if (await tcpReachable(opts.host, opts.port, 1_000)) {
    if (await natsAccepts(opts.host, opts.port, users.operator.user, users.operator.password)) {
      // This data folder's NATS, started by another `npm start`; one of an older version may not
      // know a user added since (the endpoint's, say), and that service would be refused later.
      const unknown: NatsRole[] = [];
      for (const role of ROLES)
        if (!(await natsAccepts(opts.host, opts.port, users[role].user, users[role].password))) unknown.push(role);
      if (unknown.length > 0)
        throw new Error(
          `the NATS running at ${url} for this data folder does not know the user ${unknown.join(', ')} (started by an older npm start): stop that npm start, then run this one again`,
        );
      opts.log(`NATS: using the running authenticated NATS at ${url}`);
      return { url, users, runtimeCredentialsFile, stopper: undefined };
    }
    throw new Error(
      `something else listens on ${opts.host}:${opts.port} (not this data folder's NATS): stop it, or set MCPX_NATS_PORT`,
    );
  }

  const storeDir = join(opts.dataDir, 'nats');
  await mkdir(storeDir, { recursive: true });
  const configFile = join(dir, 'nats.conf');
  const config = renderNatsServerConfig({
    users: ROLES.map((role) => ({ user: role, role, password: passwords[role] })),
    prefix: opts.prefix,
    host: opts.host,
    port: opts.port,
    storeDir,
  });
  await writeSecretFile(configFile, config);

  const binary = await findOnPath('nats-server', ['/usr/sbin', '/usr/local/sbin']);
  if (binary !== undefined) {
    const stopper = await startChild(endpoint, binary, ['-c', configFile], join(opts.dataDir, 'nats-auth.log'), opts);
    return { url, users, runtimeCredentialsFile, stopper };
  }
  const compose = await dockerComposeCommand();
  if (compose === undefined)
    throw new Error('NATS: neither nats-server nor Docker was found: install nats-server (https://nats.io) or Docker');
  // The compose file's nats-server reads deploy/nats/nats.conf (the same permissions, no prefix).
  if (opts.prefix !== '')
    throw new Error("NATS_PREFIX needs a local nats-server (the compose file's NATS has the unprefixed permissions)");
  const env = Object.fromEntries(ROLES.map((role) => [NATS_PASSWORD_ENV[role], passwords[role]]));
  const stopper = await startWithCompose(compose, [endpoint], opts, env);
  return { url, users, runtimeCredentialsFile, stopper };
}
