import { connect, type NatsConnection } from '@nats-io/transport-node';
import { makeSubjects } from '@mcpx/contracts';
import type { Meter } from '@mcpx/telemetry';
import type { LivenessOptions } from './call-types.js';
import { ProxyClient } from './proxy-client.js';

/** A NATS user and password, e.g. the stack's `runtime` user (docs/bus.md#users). */
export interface RuntimeCredentials {
  user: string;
  pass: string;
}

export interface RuntimeConnectionOptions {
  /** NATS server URL(s), comma-separated. */
  url: string;
  /** The stack's namespace prefix (`NATS_PREFIX`), default none. */
  prefix?: string;
  /** The runtime's NATS user; unset: an anonymous connection (a NATS without auth). */
  credentials?: RuntimeCredentials;
  /** The connection's name, shown by the server. */
  name?: string;
  /** Reconnect attempts (-1: forever, the default of a long-lived runtime; a CLI passes 0). */
  maxReconnectAttempts?: number;
  liveness?: LivenessOptions;
  meter?: Meter;
  /** The agent endpoint's connection: its client may call in the endpoint's runs (`ep-…`); no runtime's may. */
  endpointRuns?: boolean;
}

export interface RuntimeConnection {
  nc: NatsConnection;
  client: ProxyClient;
  close(): Promise<void>;
}

/**
 * The inbox prefix a NATS user's replies arrive under. The server's permissions let each user
 * subscribe to its own `_INBOX_<user>.>` only (so nobody reads another's replies); the same rule
 * as `inboxPrefixOf` in `@mcpx/config`.
 */
export function runtimeInboxPrefix(user: string): string {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(user)) throw new Error('NATS user must be 1-64 letters, digits, _ or -');
  return `_INBOX_${user}`;
}

/**
 * Connects an agent runtime to the proxy: the NATS connection (with the user's own inbox prefix
 * when credentials are given) and a {@link ProxyClient} on it.
 */
export async function connectRuntime(opts: RuntimeConnectionOptions): Promise<RuntimeConnection> {
  const auth = opts.credentials
    ? {
        user: opts.credentials.user,
        pass: opts.credentials.pass,
        inboxPrefix: runtimeInboxPrefix(opts.credentials.user),
      }
    : {};
  // noAsyncTraces: nats.js otherwise captures two stack traces for every request (to name the
  // caller if it fails); the client turns every failure into a typed error of its own, and the
  // captures were half of its CPU per call at 32 concurrent callers.
  const nc = await connect({
    servers: opts.url.split(','),
    name: opts.name ?? 'mcpx runtime',
    maxReconnectAttempts: opts.maxReconnectAttempts ?? -1,
    noAsyncTraces: true,
    ...auth,
  });
  const client = new ProxyClient(nc, makeSubjects(opts.prefix ?? ''), {
    ...(opts.liveness ? { liveness: opts.liveness } : {}),
    ...(opts.meter ? { meter: opts.meter } : {}),
    endpointRuns: opts.endpointRuns === true,
  });
  return {
    nc,
    client,
    close: async () => {
      await nc.drain().catch(() => nc.close());
    },
  };
}
