// `npm start`: brings up Postgres and Redis (using what answers, else Docker, else local
// binaries) and a NATS of its own with the project's authorization (one user per service and the
// agent runtime, passwords generated once under the data folder), then every service in the local
// profile with its NATS credentials, and prints where the API, NATS and the runtime's credentials are.
// The MCP endpoint (services/endpoint) connects as its own NATS user (the runtime's rights, and the
// notice of a decision its clients' users take). The endpoint's authorization server
// (services/authorization-server) runs on its own port, with no key ring and no NATS.
// A NATS_URL set by the operator is used instead, as it is (with NATS_USER/NATS_PASSWORD if set).
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundle } from './bundle.js';
import { ensureDependencies, startAuthNats, type AuthNats } from './deps/index.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// Absolute, so that the processes started with other working directories (nats-server) find it.
const dataDir = process.env.MCPX_DATA_DIR ? resolve(process.env.MCPX_DATA_DIR) : join(root, '.data');
/** The services' bundles, built at each start from the current sources (a start of its own data folder never rewrites another's). */
const bundles = join(dataDir, 'bundles');
const givenNatsUrl = process.env.NATS_URL || undefined;
const natsPort = Number(process.env.MCPX_NATS_PORT || 4223);
const env = {
  ...process.env,
  DATABASE_URL: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/mcpx',
  REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
  // The local profile lets a developer connect servers on their own machine over plain http.
  OUTBOUND_PROFILE: process.env.OUTBOUND_PROFILE ?? 'local',
  // Any key is an account on a developer's machine (compose and k8s close them: ACCOUNTS=closed).
  ACCOUNTS: process.env.ACCOUNTS ?? 'open',
};
let nats: AuthNats | undefined;

/** A service's NATS settings: its own user on the stack's NATS, or the operator's NATS_URL as given. */
function natsEnv(name: keyof typeof PORTS): Record<string, string> {
  // The authorization server uses no NATS (it has no user there).
  if (name === 'authorization-server') return {};
  if (nats === undefined) return givenNatsUrl !== undefined ? { NATS_URL: givenNatsUrl } : {};
  return { NATS_URL: nats.url, NATS_USER: nats.users[name].user, NATS_PASSWORD: nats.users[name].password };
}
const PORTS = {
  registry: Number(process.env.REGISTRY_PORT ?? 8080),
  projector: Number(process.env.PROJECTOR_PORT ?? 8081),
  proxy: Number(process.env.PROXY_PORT ?? 8082),
  endpoint: Number(process.env.ENDPOINT_PORT ?? 8083),
  'authorization-server': Number(process.env.AUTHORIZATION_SERVER_PORT ?? 8084),
};
const PORT_VARS = {
  registry: 'REGISTRY',
  projector: 'PROJECTOR',
  proxy: 'PROXY',
  endpoint: 'ENDPOINT',
  'authorization-server': 'AUTHORIZATION_SERVER',
} as const;

/**
 * A service's internal port (/metrics, /stats): `<NAME>_INTERNAL_PORT` when set; else, for a stack
 * any of whose public ports was moved (a second stack on this machine, a test), a free one, so that
 * two stacks never fight over the fixed defaults; else the service's default (9080 to 9083).
 */
function internalPortEnv(name: keyof typeof PORTS): Record<string, string> {
  const given = process.env[`${PORT_VARS[name]}_INTERNAL_PORT`];
  if (given !== undefined && given !== '') return { INTERNAL_HTTP_PORT: given };
  return Object.values(PORT_VARS).some((v) => process.env[`${v}_PORT`] !== undefined)
    ? { INTERNAL_HTTP_PORT: '0' }
    : {};
}

/**
 * The endpoint's (or the authorization server's) public port: `ENDPOINT_PORT`
 * (`AUTHORIZATION_SERVER_PORT`); else 8083 (8084), unless the stack's other public ports were moved
 * (a second stack on this machine, a test): then a free one, so that two stacks never fight over it.
 */
async function settleEndpointPort(name: 'endpoint' | 'authorization-server' = 'endpoint'): Promise<void> {
  const given = process.env[`${PORT_VARS[name]}_PORT`];
  if (given !== undefined && given !== '') return;
  if (!['REGISTRY_PORT', 'PROJECTOR_PORT', 'PROXY_PORT'].some((v) => process.env[v] !== undefined)) return;
  PORTS[name] = await new Promise<number>((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/**
 * The public URLs the services tell each other, unless the operator set them: the MCP endpoint's
 * (what `mcpx agents endpoint` prints), the authorization server's (the issuer the endpoint names,
 * and where the registry's continue links go) and the registry's (where a sign-in shows the console).
 */
function endpointEnv(name: keyof typeof PORTS): Record<string, string> {
  const registry = process.env.REGISTRY_PUBLIC_URL ?? `http://127.0.0.1:${PORTS.registry}`;
  const issuer = process.env.AUTHORIZATION_SERVER_PUBLIC_URL ?? `http://127.0.0.1:${PORTS['authorization-server']}`;
  // The console (served by the registry) shows the endpoint's URL and client configs.
  if (name === 'registry')
    return {
      ENDPOINT_PUBLIC_URL: process.env.ENDPOINT_PUBLIC_URL ?? `http://127.0.0.1:${PORTS.endpoint}`,
      AUTHORIZATION_SERVER_PUBLIC_URL: issuer,
    };
  if (name === 'authorization-server')
    return { AUTHORIZATION_SERVER_PUBLIC_URL: issuer, REGISTRY_PUBLIC_URL: registry };
  if (name !== 'endpoint') return {};
  // OAuth sign-in to the endpoint: the authorization server (its own process and port) is its issuer.
  return {
    ENDPOINT_PUBLIC_URL: process.env.ENDPOINT_PUBLIC_URL ?? `http://127.0.0.1:${PORTS.endpoint}`,
    ENDPOINT_AUTHORIZATION_SERVER: process.env.ENDPOINT_AUTHORIZATION_SERVER ?? issuer,
    // The console (an always_ask call's link) is the registry's, not the issuer's origin here.
    CONSOLE_URL: process.env.CONSOLE_URL ?? registry,
  };
}

/** What the authorization server never gets: it holds no key ring. */
function serviceBaseEnv(name: keyof typeof PORTS): Record<string, string | undefined> {
  if (name !== 'authorization-server') return env;
  const rest: Record<string, string | undefined> = { ...env };
  delete rest.SECRETS_KEYRING;
  return rest;
}

const log = (line: string): void => void process.stdout.write(`[start] ${line}\n`);
const children: ChildProcess[] = [];
/**
 * `PROXY_INSTANCES` (1 to 8, default 1): proxy processes on one registry, projector and NATS, as
 * a deployment runs them (the second on `PROXY_PORT` + 10, and so on). One that dies (`kill -9`)
 * leaves the others serving, and another takes its tasks over (docs/tasks.md).
 */
const proxyInstances = Number(process.env.PROXY_INSTANCES || 1);
const proxies: ChildProcess[] = [];

/** Another proxy instance (the second and on): its own port and instance id. */
function startProxy(n: number): ChildProcess {
  const instance = n === 1 ? 'proxy-local' : `proxy-local-${n}`;
  const child = startService('proxy', {
    HTTP_PORT: String(PORTS.proxy + 10 * (n - 1)),
    INSTANCE_ID: instance,
    // Two proxies on one machine: the second's internal port is a free one.
    ...(n > 1 ? { INTERNAL_HTTP_PORT: '0' } : {}),
  });
  proxies.push(child);
  log(`proxy ${instance}: pid ${child.pid}`);
  return child;
}

function startService(name: keyof typeof PORTS, overrides: Record<string, string> = {}): ChildProcess {
  // Node itself on the service's bundle (built below from the sources), as the image runs it.
  const child = spawn(process.execPath, [join(bundles, `${name}.mjs`)], {
    cwd: root,
    env: {
      ...serviceBaseEnv(name),
      ...natsEnv(name),
      ...internalPortEnv(name),
      ...endpointEnv(name),
      HTTP_PORT: String(PORTS[name]),
      INSTANCE_ID: `${name}-local`,
      ...overrides,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const prefix = (chunk: Buffer): void => {
    for (const line of chunk.toString('utf8').split('\n'))
      if (line.trim() !== '') process.stdout.write(`[${name}] ${line}\n`);
  };
  child.stdout?.on('data', prefix);
  child.stderr?.on('data', prefix);
  child.on('exit', (code) => {
    if (
      !stopping &&
      name === 'proxy' &&
      proxies.some((p) => p !== child && p.exitCode === null && p.signalCode === null)
    ) {
      log(`${overrides.INSTANCE_ID ?? name} exited (${code ?? child.signalCode}); the other proxy instances go on`);
      return;
    }
    if (!stopping) {
      log(`${name} exited (${code}); stopping everything`);
      void stop(1);
    }
  });
  children.push(child);
  return child;
}

async function waitHealthy(name: keyof typeof PORTS, timeoutMs = 60_000, port = PORTS[name]): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/healthz`);
      if (res.ok) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${name} did not become healthy within ${timeoutMs / 1000} s`);
}

let stopping = false;
let stopDeps: (() => Promise<void>) | undefined;
async function stop(code: number): Promise<never> {
  stopping = true;
  for (const c of children) c.kill('SIGTERM');
  await Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : c.once('exit', r)))));
  await stopDeps?.();
  process.exit(code);
}
process.on('SIGINT', () => void stop(0));
process.on('SIGTERM', () => void stop(0));

try {
  if (!Number.isInteger(natsPort) || natsPort <= 0 || natsPort > 65535)
    throw new Error('MCPX_NATS_PORT must be a port number');
  const deps = await ensureDependencies({
    databaseUrl: env.DATABASE_URL,
    ...(givenNatsUrl !== undefined ? { natsUrl: givenNatsUrl } : {}),
    redisUrl: env.REDIS_URL,
    dataDir,
    log,
  });
  stopDeps = () => deps.stop();
  // Postgres and Redis started by Docker compose have passwords: the services connect with them.
  env.DATABASE_URL = deps.databaseUrl;
  env.REDIS_URL = deps.redisUrl;
  if (givenNatsUrl === undefined) {
    try {
      nats = await startAuthNats({
        databaseUrl: env.DATABASE_URL,
        redisUrl: env.REDIS_URL,
        dataDir,
        log,
        host: '127.0.0.1',
        port: natsPort,
        prefix: process.env.NATS_PREFIX ?? '',
      });
    } catch (err) {
      await deps.stop();
      throw err;
    }
    const started = nats.stopper;
    stopDeps = async () => {
      await started?.stop();
      await deps.stop();
    };
    process.on('exit', () => started?.kill());
  }
  // Every service from the current sources, bundled (scripts/bundle.ts): a second or two here, and
  // each process then starts in a fraction of a second and about 100 MiB smaller than through tsx.
  await bundle(bundles);
  log(`services bundled into ${relative(process.cwd(), bundles) || bundles}`);
  // The registry and the projector migrate their own schemas; the proxy reads both, so it starts last.
  // The registry builds its continue links on the authorization server's URL: its port is settled first.
  await settleEndpointPort('authorization-server');
  startService('registry');
  startService('projector');
  await Promise.all([waitHealthy('registry'), waitHealthy('projector')]);
  if (!Number.isInteger(proxyInstances) || proxyInstances < 1 || proxyInstances > 8)
    throw new Error('PROXY_INSTANCES must be a whole number from 1 to 8');
  for (let n = 1; n <= proxyInstances; n++) startProxy(n);
  for (let n = 1; n <= proxyInstances; n++) await waitHealthy('proxy', 60_000, PORTS.proxy + 10 * (n - 1));
  // The authorization server takes the role and grants the registry's migrations made; it starts beside the endpoint.
  startService('authorization-server');
  // The MCP endpoint reads the registry's tokens and the projector's sets, and calls through the proxy.
  await settleEndpointPort();
  startService('endpoint');
  await Promise.all([waitHealthy('endpoint'), waitHealthy('authorization-server')]);
  if (nats !== undefined) {
    log(`NATS at ${nats.url} (its own users and permissions; no anonymous access)`);
    log(
      `the agent runtime's NATS credentials: ${relative(process.cwd(), nats.runtimeCredentialsFile) || nats.runtimeCredentialsFile} (user ${nats.users.runtime.user}; mode 0600)`,
    );
  } else {
    log(`NATS at ${givenNatsUrl} (as configured)`);
  }
  log(`API ready at http://127.0.0.1:${PORTS.registry}`);
  log(`OAuth sign-in to the endpoint: the authorization server at http://127.0.0.1:${PORTS['authorization-server']}`);
  log(
    `MCP endpoint at http://127.0.0.1:${PORTS.endpoint}/v1/agents/<agent>/mcp (mcpx agents endpoint AGENT, mcpx agents tokens new AGENT)`,
  );
  log('try: npm run mcpx -- keys new   (the README has a five-minute tour); Ctrl-C stops everything');
} catch (err) {
  log(`failed: ${(err as Error).message}`);
  await stop(1);
}
