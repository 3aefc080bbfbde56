import pg from 'pg';
import { echoTool, startTestMcpServer, type TestMcpServer, type TestTool } from '../../servers/index.js';
import { startFaultyFront, type FaultyFront } from './faulty-front.js';
import { Stack, type StackOptions } from './stack.js';

/** A private NATS, Postgres or Redis a fault test kills and restarts; `destroy` also removes its data. */
export interface PrivateInfra {
  kill(): Promise<void>;
  destroy?(): Promise<void>;
}

export interface FaultStackOptions<I extends PrivateInfra> {
  /** The private piece of infrastructure, started beside the upstream. */
  infra: Promise<I>;
  /** The stack's options, given the started infrastructure. */
  stack: (infra: I) => StackOptions;
  /** The upstream's tools (default: echo). */
  tools?: TestTool[];
  /**
   * The registry reaches NATS through a faulty front (its publishes can be black-holed); the
   * projector and the proxy reach it directly. Needs `stack` to give the NATS URL.
   */
  registryThroughFront?: { port: (infra: I) => number };
}

/** The services as processes on a private piece of infrastructure, with a modern upstream registered as `up`. */
export interface FaultStack<I extends PrivateInfra> {
  infra: I;
  stack: Stack;
  upstream: TestMcpServer;
  /** Only with `registryThroughFront`. */
  front: FaultyFront | undefined;
  /** Stops all of it in reverse (the infrastructure last, destroyed where it can be). */
  stop(): Promise<void>;
}

/**
 * Starts the infrastructure and the upstream side by side, then the stack on them, and registers
 * the upstream as `up`. What started is stopped again if a later step fails.
 */
export async function startFaultStack<I extends PrivateInfra>(opts: FaultStackOptions<I>): Promise<FaultStack<I>> {
  const [infra, upstream] = await Promise.all([
    opts.infra,
    startTestMcpServer({ era: 'modern', tools: opts.tools ?? [echoTool()] }),
  ]);
  let front: FaultyFront | undefined;
  let stack: Stack | undefined;
  const stop = async (): Promise<void> => {
    await stack?.stop();
    await front?.close();
    await upstream.close();
    await (infra.destroy ? infra.destroy() : infra.kill());
  };
  try {
    const through = opts.registryThroughFront;
    if (through) front = await startFaultyFront({ port: through.port(infra) });
    stack = await Stack.start({ ...opts.stack(infra), ...(through ? { registries: 0 } : {}) });
    if (front) await stack.spawn('registry', { NATS_URL: `nats://127.0.0.1:${front.port}` });
    await stack.setServer('up', upstream.url);
    return { infra, stack, upstream, front, stop };
  } catch (err) {
    await stop().catch(() => undefined);
    throw err;
  }
}

/** Runs one query on a connection of its own to `url`, closed after it. */
export async function queryOnce<R extends pg.QueryResultRow>(
  url: string,
  sql: string,
  params: unknown[] = [],
): Promise<pg.QueryResult<R>> {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    return await db.query<R>(sql, params);
  } finally {
    await db.end();
  }
}
