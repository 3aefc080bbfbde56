import { connect, type NatsConnection } from '@nats-io/transport-node';
import { loadConfig } from '@mcpx/config';
import { makeSubjects, type Subjects, type WireError } from '@mcpx/contracts';
import { startProjector } from '@mcpx/projector';
import { startProxy, type RunningProxy } from '@mcpx/proxy';
import { ProxyClient, type CallInput, type CallOutcome } from '@mcpx/proxy-client';
import { startRegistry, type RegistryOptions } from '@mcpx/registry';
import { setupTelemetry, type Telemetry } from '@mcpx/telemetry';
import type { ChildProcess } from 'node:child_process';
import { freePort } from '../servers/free-port.js';
import { entryArgs } from './bundles.js';
import { ApiClient } from './api-client.js';
import { serviceUrls, type TestDatabase } from './env.js';
import { alive as isAlive, spawnService, stopProcess, wireErrorOf } from './fixtures/service-process.js';
import { ROOT, eventually, systemEnv } from './system.js';

export interface ProxySystemOptions {
  /** Extra environment (e.g. PROXY_IDLE_MS, PROXY_RATE_PER_SERVER). */
  env?: Record<string, string>;
  /** Proxy instances in this process (default 1). */
  proxies?: number;
  /** Options of the registry beyond its configuration (e.g. `endpoint`, what the console shows). */
  registry?: Pick<RegistryOptions, 'endpoint'>;
  /** The services' telemetry (a test that reads their spans); default: one of the system's own, shut down with it. */
  servicesTelemetry?: Telemetry;
}

/**
 * Registry, projector and N proxies in this process on real NATS, Postgres and Redis, with a
 * namespace and database of the test's own; plus an account, a NATS connection and a proxy client
 * as the agent runtime would hold them.
 */
export class ProxySystem {
  readonly proxies: RunningProxy[] = [];
  readonly subjects: Subjects;
  readonly client: ProxyClient;
  private agentIds = new Map<string, string>();

  private constructor(
    readonly env: Record<string, string>,
    readonly db: TestDatabase,
    readonly api: ApiClient,
    readonly nc: NatsConnection,
    readonly telemetry: Telemetry,
    private readonly stops: Array<() => Promise<void>>,
  ) {
    this.subjects = makeSubjects(env.NATS_PREFIX ?? '');
    this.client = new ProxyClient(nc, this.subjects);
  }

  static async start(opts: ProxySystemOptions = {}): Promise<ProxySystem> {
    const { env, db } = await systemEnv({ LOG_LEVEL: 'warn', ...opts.env });
    const telemetry = opts.servicesTelemetry ?? (await setupTelemetry({ serviceName: 'mcpx-proxy-test' }));
    const stops: Array<() => Promise<void>> = [];
    if (opts.servicesTelemetry === undefined) stops.push(() => telemetry.shutdown());
    const config = (service: 'registry' | 'projector' | 'proxy', i = 0) =>
      loadConfig(service, {
        ...env,
        HTTP_PORT: '0',
        INSTANCE_ID: `${service}-${i}-${Math.random().toString(36).slice(2, 8)}`,
      });
    const quiet = { telemetry, logSink: () => {} };
    try {
      const registry = await startRegistry(config('registry'), { ...quiet, ...opts.registry });
      stops.push(() => registry.stop());
      const projector = await startProjector(config('projector'), quiet);
      stops.push(() => projector.stop());
      // As the runtime connects (connectRuntime): no stack traces captured per request.
      const nc = await connect({ servers: serviceUrls().nats, noAsyncTraces: true });
      stops.push(() => nc.drain());
      const system = new ProxySystem(env, db, new ApiClient(registry.url), nc, telemetry, stops);
      for (let i = 0; i < (opts.proxies ?? 1); i++) await system.addProxy();
      return system;
    } catch (err) {
      for (const s of stops.reverse()) await s().catch(() => undefined);
      await db.drop().catch(() => undefined);
      throw err;
    }
  }

  /** Starts one more proxy instance in this process. */
  async addProxy(extraEnv: Record<string, string> = {}): Promise<RunningProxy> {
    const i = this.proxies.length;
    const proxy = await startProxy(
      loadConfig('proxy', {
        ...this.env,
        ...extraEnv,
        HTTP_PORT: '0',
        INSTANCE_ID: `proxy-${i}-${Math.random().toString(36).slice(2, 8)}`,
      }),
      {
        telemetry: this.telemetry,
        logSink: () => {},
      },
    );
    this.proxies.push(proxy);
    return proxy;
  }

  get account(): string {
    return this.api.principal;
  }

  /** `SetMcpServer` and waits for a successful discovery. */
  async setServer(name: string, url: string): Promise<void> {
    const { server } = await this.api.actForSetUp<{ server: { status: { state: string; error?: string } } }>(
      'SetMcpServer',
      {
        name,
        config: { url },
      },
    );
    if (server.status.state !== 'ok')
      throw new Error(`server ${name} did not connect: ${server.status.error ?? server.status.state}`);
  }

  /** Creates an agent granted `servers` and waits until it has `minTools` tools projected. */
  async createAgent(name: string, servers: string[], minTools = 1): Promise<string> {
    const { agent } = await this.api.actForSetUp<{ agent: { id: string } }>('CreateAgent', {
      name,
      definition: { mcpServers: servers },
    });
    this.agentIds.set(name, agent.id);
    await eventually(
      async () => {
        const t = await this.api.act<{ tools: unknown[] }>('ListAgentTools', { agent: agent.id });
        return t.tools.length >= minTools ? true : undefined;
      },
      15_000,
      `tools projected onto ${name}`,
    );
    return agent.id;
  }

  /** A call as the runtime makes it; the agent is an id or a name given to createAgent. */
  call(
    agent: string,
    run: string,
    tool: string,
    args: Record<string, unknown> = {},
    extra: Partial<CallInput> = {},
  ): Promise<CallOutcome> {
    return this.client.call({
      account: this.account,
      agent: this.agentIds.get(agent) ?? agent,
      run,
      tool,
      arguments: args,
      ...extra,
    });
  }

  /** The typed error a call fails with (fails the test if it succeeds). */
  async callError(
    agent: string,
    run: string,
    tool: string,
    args: Record<string, unknown> = {},
    extra: Partial<CallInput> = {},
  ): Promise<WireError> {
    return await wireErrorOf(this.call(agent, run, tool, args, extra), tool);
  }

  agentId(name: string): string {
    const id = this.agentIds.get(name);
    if (id === undefined) throw new Error(`no agent ${name}`);
    return id;
  }

  async stop(): Promise<void> {
    for (const p of this.proxies) await p.stop().catch(() => undefined);
    for (const s of [...this.stops].reverse()) await s().catch(() => undefined);
    await this.db.drop().catch(() => undefined);
  }
}

/** A proxy running as its own process (SIGKILL-able), against a ProxySystem's namespace. */
export interface ProxyProcess {
  instance: string;
  /** The public port (`/healthz` only). */
  url: string;
  /** The internal port: `/healthz`, `/metrics`, `/stats`. */
  internalUrl: string;
  child: ChildProcess;
  logs: string[];
  kill(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Spawns `services/proxy/src/main.ts` with the system's environment and waits until healthy. A
 * free port can be taken by another test's process between the probe and the proxy's listen: a
 * start that fails with EADDRINUSE is tried again on other ports (three times at most).
 */
export async function spawnProxyProcess(
  system: ProxySystem,
  extraEnv: Record<string, string> = {},
  nodeArgs: string[] = [],
  root?: string,
): Promise<ProxyProcess> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await spawnProxyOnce(system, extraEnv, nodeArgs, root);
    } catch (err) {
      if (attempt >= 3 || !String((err as Error).message).includes('EADDRINUSE')) throw err;
    }
  }
}

async function spawnProxyOnce(
  system: ProxySystem,
  extraEnv: Record<string, string>,
  nodeArgs: string[],
  root: string | undefined,
): Promise<ProxyProcess> {
  const port = await freePort();
  const internalPort = await freePort();
  const instance = `proxyp-${port}`;
  // Node itself with tsx as a loader (not the tsx wrapper): a SIGKILL must kill the very process
  // that holds the connections, not a relay in front of it.
  // `root`: another checkout's proxy (a bench's baseline beside this code).
  const entry = entryArgs('proxy', { ...(root !== undefined ? { root } : {}) });
  const { child, logs } = spawnService([...nodeArgs, ...entry], {
    cwd: root ?? ROOT,
    env: { ...process.env, ...system.env, ...extraEnv },
    port,
    internalPort,
    instance,
  });
  const url = `http://127.0.0.1:${port}`;
  const alive = (): boolean => isAlive(child);
  // Healthy, or out at once when the process exits (its logs say why).
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (!alive()) throw new Error(`proxy exited:\n${logs.join('')}`);
    if ((await fetch(`${url}/healthz`).catch(() => undefined))?.ok) break;
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for proxy ${instance} healthy:\n${logs.join('').slice(-4000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    instance,
    url,
    internalUrl: `http://127.0.0.1:${internalPort}`,
    child,
    logs,
    kill: () => stopProcess(child, 'SIGKILL'),
    stop: () => stopProcess(child),
  };
}
