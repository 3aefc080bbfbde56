// The endpoint's parts, built from its configuration: what `startEndpoint` puts together on one screen.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Redis } from 'ioredis';
import { notify, retryStartup } from '@mcpx/bus';
import type { TrustedProxies } from '@mcpx/config/trusted-proxies';
import type { Subjects } from '@mcpx/contracts';
import { ApprovalStore, RateLimiter, connectLimitsRedis } from '@mcpx/shared-state';
import { InboundGuard } from '@mcpx/inbound';
import type { Logger } from '@mcpx/log';
import { connectRuntime, type RuntimeConnection } from '@mcpx/proxy-client';
import type { Meter } from '@mcpx/telemetry';
import type { NatsConnection } from '@nats-io/transport-node';
import type { AgentServers } from './agent-server.js';
import type { EndpointConfig } from './config.js';
import { refusedMalformedHost } from './http.js';
import { DecisionAudit } from './decision-audit.js';
import type { EndpointHandler } from './http.js';
import { answerRefusal, gatedRequests } from './inbound-gate.js';
import { LeanCalls } from './lean-calls.js';
import { LegacyClients } from './legacy-clients.js';
import { TokenFailures } from './token-failures.js';
import type { ToolSets } from './tool-sets.js';
import { UserApprovals } from './user-approvals.js';

/** A failing limit is reported at most this often (it admits meanwhile). */
const LIMIT_WARNING_EVERY_MS = 10_000;

/** The instance's id as one subject token (it names the instance's subject and its questions' ids). */
export function instanceToken(instanceId: string): string {
  return instanceId.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 128) || 'endpoint';
}

/**
 * The endpoint's NATS connection: the runtime's (connectRuntime: no async stack traces per
 * request, its user's own inbox, no JetStream) on the endpoint's own user. A node that is not
 * listening yet is waited for, with backoff and bounded, like every service (`retryStartup`).
 */
export function connectNats(
  config: EndpointConfig,
  instance: string,
  log: Logger,
  meter: Meter,
): Promise<RuntimeConnection> {
  const creds = config.natsCredentials;
  const connect = (): Promise<RuntimeConnection> =>
    connectRuntime({
      url: config.natsUrl,
      prefix: config.natsPrefix,
      name: `endpoint ${instance}`,
      meter,
      endpointRuns: true,
      ...(creds ? { credentials: { user: creds.user, pass: creds.pass } } : {}),
    });
  return retryStartup('connect', connect, { log });
}

/** Redis, failing fast: the failed-token limit must not queue behind an outage (it admits instead). */
export function connectRedis(config: EndpointConfig, log: Logger): Promise<Redis> {
  return connectLimitsRedis(config.redisUrl, (err) =>
    log.warn('redis unavailable: the failed-token limit admits until it answers', { err }),
  );
}

/** The per-address limit on failed token attempts, shared by the instances through Redis. */
export function tokenFailures(redis: Redis, config: EndpointConfig, log: Logger): TokenFailures {
  let lastWarning = 0;
  const limiter = new RateLimiter(redis, config.redisPrefix, {
    onError: (err) => {
      if (Date.now() - lastWarning < LIMIT_WARNING_EVERY_MS) return;
      lastWarning = Date.now();
      log.warn('failed-token limit unavailable, admitting', { err });
    },
    // Its reason to admit is on TokenFailures: the tokens are 256-bit random, the limit guards the token table.
    whenRedisFails: 'admit',
  });
  return new TokenFailures(limiter, config.tokenFailuresPerAddress);
}

/**
 * Approvals by the client's user: decided in the store the owner's decisions use, announced as the
 * registry announces an owner's, audited by the registry.
 */
export function userApprovals(d: {
  config: EndpointConfig;
  redis: Redis;
  nc: NatsConnection;
  subjects: Subjects;
  log: Logger;
}): UserApprovals {
  const { config, nc, subjects, log } = d;
  if (config.keyring.length === 0)
    log.warn('SECRETS_KEYRING unset: approval questions are sealed with a key of this instance only');
  return new UserApprovals({
    store: new ApprovalStore(d.redis, config.redisPrefix, { ttlMs: config.approvalTtlMs }),
    audit: new DecisionAudit({ nc, subjects, log }),
    keyring: config.keyring,
    log,
    ...(config.consoleUrl !== undefined ? { consoleUrl: config.consoleUrl } : {}),
    announce: (event) => notify(nc, subjects.approvalDecided(event.account), event),
  });
}

/**
 * The lean path (`ENDPOINT_LEAN_CALLS`): single tools/call requests the SDK would take as they are,
 * answered beside it with the same bytes; undefined when off.
 */
export function leanCalls(d: {
  config: EndpointConfig;
  instance: string;
  nc: NatsConnection;
  subjects: Subjects;
  redis: Redis;
  log: Logger;
  toolSets: ToolSets;
  failures: TokenFailures;
  servers: AgentServers;
  serverInfo: { name: string; version: string };
}): LeanCalls | undefined {
  const { config, log } = d;
  if (!config.leanCalls) return undefined;
  return new LeanCalls({
    toolSets: d.toolSets,
    failures: d.failures,
    calls: d.servers.calls,
    clients: new LegacyClients({
      nc: d.nc,
      subjects: d.subjects,
      instance: d.instance,
      redis: d.redis,
      redisPrefix: config.redisPrefix,
      log,
    }),
    logLevels: d.servers.logLevels,
    allowedHosts: config.allowedHosts,
    serverInfo: d.serverInfo,
    onError: (err) => log.warn('mcp request failed', { err }),
  });
}

/**
 * The public HTTP server, listening: each request with the client's address (the socket's peer,
 * or what trusted proxies say), held to the inbound bounds (`ENDPOINT_*` of `InboundLimits`: no
 * body read before its headers are admitted, body deadline and budget, sockets per peer address;
 * trusted proxies' sockets are not capped), through the lean path when it takes it, else the SDK's.
 */
export async function listenPublic(d: {
  config: EndpointConfig;
  trusted: TrustedProxies;
  handler: EndpointHandler;
  lean: LeanCalls | undefined;
  log: Logger;
  meter: Meter;
  /** Counts a request refused before the gate (a malformed Host). */
  refused: (reason: string) => void;
}): Promise<{ url: string; close(): Promise<void> }> {
  const guard = new InboundGuard({
    limits: d.config.inbound,
    exempt: (address) => d.trusted.has(address),
    meter: d.meter,
    log: d.log,
    answer: answerRefusal,
  });
  const onError = (err: Error): void => d.log.warn('endpoint request failed', { err });
  const gated = gatedRequests({ handler: d.handler, lean: d.lean, guard, trusted: d.trusted, onError });
  const http = createServer(InboundGuard.serverOptions, (req, res) => {
    // Before any URL is built on the Host (a userinfo in it would throw: a 500).
    if (refusedMalformedHost(req, res, d.refused)) return;
    gated(req, res);
  });
  // Deadlines for headers and bodies, idle keep-alive sockets closed; responses (notification
  // streams) are not timed.
  guard.attach(http);
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(d.config.httpPort, d.config.httpHost, resolve);
  });
  const addr = http.address() as AddressInfo;
  return {
    url: `http://${addr.address.includes(':') ? `[${addr.address}]` : addr.address}:${addr.port}`,
    close: async () => {
      http.closeAllConnections();
      await new Promise<void>((r) => http.close(() => r()));
    },
  };
}
