import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import type { LogSink } from '@mcpx/log';
import { setupTelemetry, type Telemetry } from '@mcpx/telemetry';
import {
  startOAuthServer,
  startProtectedMcpServer,
  type TestMcpServer,
  type TestOAuthServer,
  type TestOAuthServerOptions,
} from '../servers/index.js';
import { InProcessSystem } from './system.js';

export interface OAuthSystemOptions {
  /** The telemetry's service name: one per test file. */
  serviceName: string;
  /** Where spans go; a test that reads them passes its own (default: one nobody reads). */
  spanExporter?: InMemorySpanExporter;
  /** The authorization server's options (token lifetime, client credentials, …). */
  authorizationServer?: TestOAuthServerOptions;
  /** Every log line of the in-process services. */
  logSink?: LogSink;
  /** Extra environment of the in-process services. */
  env?: Record<string, string>;
  /**
   * The protected MCP server's protocol era: `legacy` (SDK v1, 2025-11-25, the default) or
   * `modern` (SDK v2, `legacy: 'reject'`: 2026-07-28 only). The authorization server is the SDK
   * v1 router's either way (SDK v2 ships no authorization server).
   */
  era?: 'legacy' | 'modern';
}

/** How long each part may take to stop before the teardown reports it and goes on to the next. */
const STOP_WAIT_MS = 15_000;

type Stop = { what: string; stop: () => Promise<unknown> };

/** Runs every stop in order, each bounded; throws what failed once all have run. */
async function stopAll(stops: Stop[]): Promise<void> {
  const errors: unknown[] = [];
  for (const { what, stop } of stops) {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not stop within ${STOP_WAIT_MS} ms`)), STOP_WAIT_MS);
    });
    try {
      await Promise.race([stop(), late]);
    } catch (err) {
      errors.push(err);
    } finally {
      clearTimeout(timer);
    }
  }
  if (errors.length > 0)
    throw new AggregateError(
      errors,
      `the OAuth system did not stop cleanly: ${errors.map((e) => (e as Error).message).join('; ')}`,
    );
}

/**
 * What an OAuth test runs against: telemetry (spans in memory), a test authorization server, an
 * MCP server that takes only that server's tokens, and the three services in this process. Started
 * in that order and stopped in the reverse one; a test starts anything of its own after it and
 * stops that first.
 */
export class OAuthSystem {
  private constructor(
    readonly telemetry: Telemetry,
    readonly as: TestOAuthServer,
    readonly upstream: TestMcpServer,
    readonly system: InProcessSystem,
    private readonly stops: Stop[],
  ) {}

  static async start(opts: OAuthSystemOptions): Promise<OAuthSystem> {
    const stops: Stop[] = [];
    try {
      const telemetry = await setupTelemetry({
        serviceName: opts.serviceName,
        spanExporter: opts.spanExporter ?? new InMemorySpanExporter(),
      });
      stops.unshift({ what: 'telemetry', stop: () => telemetry.shutdown() });
      const as = await startOAuthServer(opts.authorizationServer);
      stops.unshift({ what: 'the authorization server', stop: () => as.close() });
      const upstream = await startProtectedMcpServer(as, opts.era === 'modern' ? { era: 'modern' } : {});
      stops.unshift({ what: 'the protected MCP server', stop: () => upstream.close() });
      const system = await InProcessSystem.start({ telemetry, logSink: opts.logSink, env: opts.env });
      stops.unshift({ what: 'the in-process system', stop: () => system.stop() });
      return new OAuthSystem(telemetry, as, upstream, system, stops);
    } catch (err) {
      // The start's own failure is the one to report; what did start is stopped all the same.
      await stopAll(stops).catch(() => undefined);
      throw err;
    }
  }

  /** Stops the system, the protected server, the authorization server and telemetry, each bounded. */
  stop(): Promise<void> {
    return stopAll(this.stops);
  }
}
