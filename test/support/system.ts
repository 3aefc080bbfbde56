import type { ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadAuthorizationServerSettings, loadConfig, type Config } from '@mcpx/config';
import { startAuthorizationServer } from '@mcpx/authorization-server';
import type { LogSink } from '@mcpx/log';
import { startProjector } from '@mcpx/projector';
import { startProxy } from '@mcpx/proxy';
import { startRegistry } from '@mcpx/registry';
import type { Telemetry } from '@mcpx/telemetry';
import { freePort } from '../servers/free-port.js';
import { entryArgs } from './bundles.js';
import { spawnService, stopProcess } from './fixtures/service-process.js';
import { createTestDatabase, serviceUrls, uniqueNamespace, type TestDatabase } from './env.js';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export type ServiceName = 'registry' | 'projector' | 'proxy';
/** What `ProcessSystem` runs: the three services, and the endpoint's authorization server when asked. */
export type ProcessName = ServiceName | 'authorization-server';

/** What the authorization server never gets: it holds no key ring and no NATS. */
const NOT_FOR_THE_AUTHORIZATION_SERVER = ['SECRETS_KEYRING', 'NATS_URL', 'NATS_USER', 'NATS_PASSWORD', 'NATS_PREFIX'];

export interface SystemOptions {
  /** Extra environment for every service (e.g. OUTBOUND_PROFILE, TOOL_NAME_STYLE). */
  env?: Record<string, string>;
  /** How many proxy instances (default 1). */
  proxies?: number;
  /** How many projector instances (default 1). */
  projectors?: number;
  /**
   * Each service's own NATS settings (`NATS_URL`, `NATS_USER`, `NATS_PASSWORD`), e.g.
   * `(s) => natsAuth.env(s)` of a `NatsAuthServer`; unset: the machine's NATS without auth.
   */
  natsEnv?: (service: ServiceName) => Record<string, string>;
  /**
   * Also run the agent endpoint's authorization server (`@mcpx/authorization-server`) as its own
   * process on its own origin (`authUrl`; the registry's continue links point there, its console
   * link to the registry), as the endpoint's OAuth sign-in tests need.
   */
  authorizationServer?: boolean;
}

/** The environment a system of this test's own runs with: its database, subjects and keys. */
export async function systemEnv(
  extra: Record<string, string> = {},
): Promise<{ env: Record<string, string>; db: TestDatabase }> {
  const db = await createTestDatabase();
  const ns = uniqueNamespace();
  const urls = serviceUrls();
  return {
    db,
    env: {
      DATABASE_URL: db.url,
      NATS_URL: urls.nats,
      REDIS_URL: urls.redis,
      NATS_PREFIX: ns.natsPrefix,
      REDIS_PREFIX: ns.redisPrefix,
      OUTBOUND_PROFILE: 'local',
      SECRETS_KEYRING: 'k1:' + Buffer.alloc(32, 1).toString('base64'),
      LOG_LEVEL: 'info',
      ...extra,
    },
  };
}

async function waitHealthy(
  url: string,
  child: ChildProcess | undefined,
  logs: string[],
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child && child.exitCode !== null) throw new Error(`service exited (${child.exitCode}):\n${logs.join('')}`);
    try {
      if ((await fetch(`${url}/healthz`)).ok) return;
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`service at ${url} not healthy in time:\n${logs.join('')}`);
}

export interface ServiceProcess {
  name: ProcessName;
  instance: string;
  url: string;
  /** Its internal port: `/healthz`, `/metrics` and (the proxy) `/stats`, which `url` does not serve. */
  internalUrl: string;
  child: ChildProcess;
  /** Everything it wrote to stdout and stderr. */
  logs: string[];
}

/** The three services as separate processes, the way they run in production. */
export class ProcessSystem {
  readonly services: ServiceProcess[] = [];
  apiUrl = '';
  /** The authorization server's URL, its issuer (`SystemOptions.authorizationServer`; else empty). */
  authUrl = '';

  private constructor(
    readonly env: Record<string, string>,
    readonly db: TestDatabase,
    private readonly natsEnv: (service: ServiceName) => Record<string, string> = () => ({}),
  ) {}

  static async start(opts: SystemOptions = {}): Promise<ProcessSystem> {
    const { env, db } = await systemEnv(opts.env);
    const authPort = opts.authorizationServer === true ? await freePort() : undefined;
    if (authPort !== undefined) env.AUTHORIZATION_SERVER_PUBLIC_URL = `http://127.0.0.1:${authPort}`;
    const system = new ProcessSystem(env, db, opts.natsEnv);
    try {
      const registry = await system.spawn('registry');
      system.apiUrl = registry.url;
      // After the registry: its migrations create the authorization server's role and grants.
      if (authPort !== undefined)
        system.authUrl = (
          await system.spawn('authorization-server', authPort, { REGISTRY_PUBLIC_URL: registry.url })
        ).url;
      for (let i = 0; i < (opts.projectors ?? 1); i++) await system.spawn('projector');
      for (let i = 0; i < (opts.proxies ?? 1); i++) await system.spawn('proxy');
    } catch (err) {
      await system.stop();
      throw err;
    }
    return system;
  }

  /** Starts one more instance of a service and waits until it is healthy. */
  async spawn(name: ProcessName, port?: number, extraEnv: Record<string, string> = {}): Promise<ServiceProcess> {
    port ??= await freePort();
    const internalPort = await freePort();
    const instance = `${name}-${this.services.filter((s) => s.name === name).length + 1}-${port}`;
    // node itself (not the tsx wrapper), so that a kill reaches the service's own process.
    const forAuthorizationServer = name === 'authorization-server';
    const { child, logs } = spawnService(entryArgs(name), {
      cwd: ROOT,
      env: {
        ...(forAuthorizationServer ? withoutKeys(process.env, NOT_FOR_THE_AUTHORIZATION_SERVER) : process.env),
        ...(forAuthorizationServer ? withoutKeys(this.env, NOT_FOR_THE_AUTHORIZATION_SERVER) : this.env),
        ...(forAuthorizationServer ? {} : this.natsEnv(name)),
        ...extraEnv,
      },
      port,
      internalPort,
      instance,
    });
    const svc: ServiceProcess = {
      name,
      instance,
      url: `http://127.0.0.1:${port}`,
      internalUrl: `http://127.0.0.1:${internalPort}`,
      child,
      logs,
    };
    this.services.push(svc);
    await waitHealthy(svc.url, child, logs);
    return svc;
  }

  /** Kills an instance without letting it clean up (SIGKILL). */
  async kill(svc: ServiceProcess): Promise<void> {
    await stopProcess(svc.child, 'SIGKILL');
  }

  allLogs(): string {
    return this.services.map((s) => s.logs.join('')).join('');
  }

  async stop(): Promise<void> {
    await Promise.all(this.services.map((s) => stopProcess(s.child)));
    await this.db.drop().catch(() => undefined);
  }
}

/** `env` without `keys`. */
function withoutKeys(env: NodeJS.ProcessEnv | Record<string, string>, keys: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && !keys.includes(k)) out[k] = v;
  return out;
}

/**
 * The three services in this process (for tests that read their spans or logs directly); with
 * `authorizationServer: true` the endpoint's authorization server too, on its own origin
 * (`authUrl`), started as `ProcessSystem` starts it: after the registry, without the key ring or NATS.
 */
export class InProcessSystem {
  /** The authorization server's URL, its issuer (`authorizationServer: true`; else empty). */
  authUrl = '';

  private constructor(
    readonly env: Record<string, string>,
    readonly db: TestDatabase,
    readonly apiUrl: string,
    private readonly stops: Array<() => Promise<void>>,
    readonly config: (service: ServiceName) => Config,
  ) {}

  static async start(opts: {
    telemetry: Telemetry;
    logSink?: LogSink;
    env?: Record<string, string>;
    natsEnv?: SystemOptions['natsEnv'];
    authorizationServer?: boolean;
  }): Promise<InProcessSystem> {
    const { env, db } = await systemEnv(opts.env);
    const config = (service: ServiceName): Config =>
      loadConfig(service, { ...env, ...opts.natsEnv?.(service), HTTP_PORT: '0', INSTANCE_ID: `${service}-inproc` });
    const common = { telemetry: opts.telemetry, ...(opts.logSink ? { logSink: opts.logSink } : {}) };
    // Its origin is known before the registry starts: DecideSignIn's continue links point there.
    const authPort = opts.authorizationServer === true ? await freePort() : undefined;
    const authUrl = authPort === undefined ? undefined : `http://127.0.0.1:${authPort}`;
    const registry = await startRegistry(config('registry'), {
      ...common,
      ...(authUrl !== undefined ? { authorizationServerUrl: authUrl } : {}),
    });
    const stops = [() => registry.stop()];
    if (authPort !== undefined && authUrl !== undefined) {
      const settings = loadAuthorizationServerSettings({
        ...withoutKeys(env, NOT_FOR_THE_AUTHORIZATION_SERVER),
        HTTP_PORT: String(authPort),
        INTERNAL_HTTP_PORT: '0',
        AUTHORIZATION_SERVER_PUBLIC_URL: authUrl,
        REGISTRY_PUBLIC_URL: registry.url,
        INSTANCE_ID: 'authorization-server-inproc',
      });
      const auth = await startAuthorizationServer(settings, common);
      stops.unshift(() => auth.stop());
    }
    const projector = await startProjector(config('projector'), common);
    const proxy = await startProxy(config('proxy'), common);
    const system = new InProcessSystem(
      env,
      db,
      registry.url,
      [() => proxy.stop(), () => projector.stop(), ...stops],
      config,
    );
    system.authUrl = authUrl ?? '';
    return system;
  }

  async stop(): Promise<void> {
    for (const s of this.stops) await s().catch(() => undefined);
    await this.db.drop().catch(() => undefined);
  }
}

/** Polls until `fn` returns a value that is not undefined, or fails after `timeoutMs`. */
export async function eventually<T>(
  fn: () => Promise<T | undefined>,
  timeoutMs = 15_000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastErr: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (err) {
      lastErr = err;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}${lastErr ? `: ${(lastErr as Error).message}` : ''}`);
}
