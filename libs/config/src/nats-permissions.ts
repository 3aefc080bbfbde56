/**
 * NATS least privilege (docs/bus.md#users): what each user of the bus may publish and subscribe, and the
 * nats-server configuration that enforces it. Pure: no I/O, so `npm start`, the compose file,
 * `deploy/` and the tests render the same rules.
 *
 * Users (one per service, the agent runtime, and an operator):
 * - `registry` — publishes `mcp.events.>` (the only one), `mcp.approvals.decided.*`,
 *   `mcp.inputs.answered.*`, requests the
 *   projector's endpoints and the proxy (InvokeTool, EndRun); answers `registry.oauth.refresh`
 *   and `registry.approvals.token-decided`; reads `mcp.proxy.tools.observed`, the events it
 *   streams to browsers and the proxies' task events (`mcp.tasks.>`, for the audit log); asks
 *   `mcp.proxy.tasks` for the task actions.
 * - `projector` — publishes `agents.tools.changed.>` (the only one); answers `projector.*`;
 *   consumes `MCP_EVENTS` through its durable `projector`.
 * - `proxy` — the only one that subscribes to `mcp.proxy.call`, `mcp.proxy.<instance>.call`,
 *   `mcp.proxy.cancel`, `mcp.proxy.calls.held`, `mcp.runs.ended.>` and its `$SRV` subjects;
 *   the only one that publishes a call's progress (`mcp.calls.progress.<acct>.<run>.<callId>`),
 *   its log messages (`mcp.calls.log.<acct>.<run>.<callId>`, heard by the endpoint only)
 *   and a task's status (`mcp.tasks.<acct>.<task>`); answers `mcp.proxy.tasks`.
 * - `endpoint` — the agent MCP endpoint (services/endpoint): calls through the proxy as the
 *   runtime does, and besides publishes `mcp.approvals.decided.*` (the decision of a client's
 *   user it applied, as the registry publishes an owner's) and talks to its other instances on
 *   `mcp.endpoint.>` (a legacy client's answer that reached the wrong instance, the capabilities
 *   a legacy client declared) and asks the registry to audit that decision on
 *   `registry.approvals.token-decided` (the only one that may: the registry writes the entry from
 *   its approval store); reads `agents.tools.changed.>`.
 * - `runtime` — the set a platform hands its agent runtime: requests `mcp.proxy.call`,
 *   `mcp.proxy.<instance>.call`, `mcp.proxy.calls.held` and `mcp.proxy.tasks`, reads task
 *   status (`mcp.tasks.>`), publishes `mcp.proxy.cancel` and
 *   `mcp.runs.ended.>`, reads `mcp.approvals.decided.*` (`callAwaitingApproval`),
 *   `mcp.inputs.answered.*` (`callAwaitingInput`), its calls' progress
 *   (`mcp.calls.progress.*.*.*`, a call's `onProgress`) and
 *   `agents.tools.changed.>` (core NATS: no JetStream API). The endpoint hears progress too.
 * - `operator` — everything (`>`), for people with the operator's credentials only.
 *
 * Replies: every user but the operator receives replies only on its own inbox prefix
 * `_INBOX_<user>` (the `inboxPrefix` connection option), so nobody can subscribe to another's
 * replies; repliers answer through `allow_responses` (one reply per request), never a publish
 * right on someone's inbox.
 */

/**
 * The roles with a NATS user. The agent endpoint's authorization server (`@mcpx/authorization-server`)
 * has none, on purpose: it publishes and hears nothing (a revoked token is announced on Postgres's
 * `mcpx_agent_tokens` channel), so it gets no credentials and an anonymous client is refused.
 */
export const NatsRoles = ['registry', 'projector', 'proxy', 'endpoint', 'runtime', 'operator'] as const;
export type NatsRole = (typeof NatsRoles)[number];

export interface NatsPermissions {
  publish: string[];
  subscribe: string[];
  /** Whether the user may answer requests it received (one reply each, within `expiresMs`). */
  allowResponses: { maxMsgs: number; expiresMs: number } | false;
}

export interface NatsUser {
  /** The user name (a subject token: letters, digits, `_`, `-`); its inbox prefix is `_INBOX_<user>`. */
  user: string;
  /**
   * The password, or `{env}`: the name of an environment variable nats-server reads it from when it
   * loads the config (`$VAR`), so a committed config holds no secret.
   */
  password: string | { env: string };
  role: NatsRole;
}

/** One entry of nats-server's `authorization.users`, as plain data (for nats.conf or Helm values). */
export interface NatsUserEntry {
  user: string;
  /** A literal password, or `{env}` (rendered as a variable reference). */
  password: string | { env: string };
  permissions: {
    publish: { allow: string[] };
    subscribe: { allow: string[] };
    allow_responses?: { max: number; expires: string };
  };
}

/**
 * The `authorization.users` entries for `users` under `prefix`; checks names (tokens, unique),
 * literal passwords (16 characters at least) and variable names.
 */
export function natsUserEntries(users: readonly NatsUser[], prefix = ''): NatsUserEntry[] {
  const names = new Set<string>();
  return users.map((u) => {
    inboxPrefixOf(u.user);
    if (names.has(u.user)) throw new Error(`NATS user ${u.user} is listed twice`);
    names.add(u.user);
    if (typeof u.password === 'string' && u.password.length < 16)
      throw new Error(`NATS user ${u.user} needs a password of at least 16 characters`);
    if (typeof u.password !== 'string' && !/^[A-Z_][A-Z0-9_]*$/.test(u.password.env))
      throw new Error(`NATS user ${u.user}: ${u.password.env} is not an environment variable name`);
    const perm = natsPermissions(u.role, u.user, prefix);
    return {
      user: u.user,
      password: u.password,
      permissions: {
        publish: { allow: perm.publish },
        subscribe: { allow: perm.subscribe },
        ...(perm.allowResponses === false
          ? {}
          : {
              allow_responses: {
                max: perm.allowResponses.maxMsgs,
                expires: `${Math.round(perm.allowResponses.expiresMs / 1000)}s`,
              },
            }),
      },
    };
  });
}

/**
 * How long a replier may take to answer: the proxy's longest call (its 10-minute cap) with a
 * margin. Past it the server drops the reply, and the caller has long timed out anyway.
 */
export const RESPONSE_WINDOW_MS = 11 * 60_000;

/** The projector's durable consumer on `MCP_EVENTS` (services/projector's `PROJECTOR_DURABLE`). */
const PROJECTOR_DURABLE = 'projector';
/** The proxy's micro-service name (services/proxy's `proxyServiceName`): `$SRV` subjects are not prefixed. */
const PROXY_SERVICE = 'mcpx-proxy';

const USER_RE = /^[A-Za-z0-9_-]{1,64}$/;

/** The inbox prefix a user's connection must set (`inboxPrefix`), the only one it may subscribe to. */
export function inboxPrefixOf(user: string): string {
  if (!USER_RE.test(user)) throw new Error('NATS user must be 1-64 letters, digits, _ or -');
  return `_INBOX_${user}`;
}

/** Stream names under a namespace prefix, as `makeSubjects` builds them (`t1.` → `T1_MCP_EVENTS`). */
function streamNames(prefix: string): { events: string; tools: string } {
  const s = prefix === '' ? '' : prefix.slice(0, -1).toUpperCase().replace(/-/g, '_') + '_';
  return { events: `${s}MCP_EVENTS`, tools: `${s}AGENT_TOOLS` };
}

/**
 * The JetStream API a service needs to run `ensureStreams` on start (`@mcpx/bus`): the account
 * check the manager makes, and reading or creating the two streams by name. Not `STREAM.DELETE`,
 * `STREAM.UPDATE`, `STREAM.PURGE` nor any other stream.
 */
function ensureStreamsApi(prefix: string): string[] {
  const { events, tools } = streamNames(prefix);
  return [
    '$JS.API.INFO',
    ...[events, tools].flatMap((n) => [`$JS.API.STREAM.INFO.${n}`, `$JS.API.STREAM.CREATE.${n}`]),
  ];
}

/**
 * The permissions of one role under a namespace prefix (`NATS_PREFIX`, e.g. `t1.` or empty), for
 * the user `user` (whose inbox prefix is `_INBOX_<user>`).
 */
export function natsPermissions(role: NatsRole, user: string, prefix = ''): NatsPermissions {
  if (prefix !== '' && !/^[A-Za-z0-9_-]+\.$/.test(prefix))
    throw new Error('NATS_PREFIX must be letters, digits, _ or - followed by a dot');
  const s = sharedSubjects(user, prefix);
  switch (role) {
    case 'registry':
      return registryPermissions(s);
    case 'projector':
      return projectorPermissions(s);
    case 'proxy':
      return proxyPermissions(s);
    case 'endpoint':
      return endpointPermissions(s);
    case 'runtime':
      return runtimePermissions(s);
    case 'operator':
      return { publish: ['>'], subscribe: ['>'], allowResponses: false };
  }
}

/** The subjects more than one role names, under the namespace prefix `p`, and the user's own inbox. */
function sharedSubjects(user: string, p: string) {
  return {
    p,
    inbox: `${inboxPrefixOf(user)}.>`,
    replies: { maxMsgs: 1, expiresMs: RESPONSE_WINDOW_MS },
    // The JetStream API of `ensureStreams` (every service but the endpoint runs it on start).
    ensureStreams: ensureStreamsApi(p),
    // A call's progress: published by the proxy running it, heard by its caller (a runtime, the endpoint).
    callProgress: `${p}mcp.calls.progress.*.*.*`,
    // A call's log messages (docs/endpoint.md#logging): published by the proxy running it, heard by the endpoint.
    callLog: `${p}mcp.calls.log.*.*.*`,
    callProxy: [
      `${p}mcp.proxy.call`,
      `${p}mcp.proxy.*.call`,
      `${p}mcp.proxy.calls.held`,
      `${p}mcp.proxy.cancel`,
      `${p}mcp.runs.ended.>`,
      `${p}mcp.proxy.tasks`,
    ],
    // A brokered task's status changes (docs/tasks.md): published only by the proxy polling it.
    taskEvents: `${p}mcp.tasks.>`,
  };
}

type SharedSubjects = ReturnType<typeof sharedSubjects>;

function registryPermissions({
  p,
  inbox,
  replies,
  ensureStreams,
  callProxy,
  taskEvents,
}: SharedSubjects): NatsPermissions {
  return {
    publish: [
      `${p}mcp.events.>`,
      `${p}mcp.approvals.decided.*`,
      `${p}mcp.reviews.requested.*`,
      `${p}mcp.inputs.answered.*`,
      `${p}projector.agent-tools.get`,
      `${p}projector.lambda.set`,
      `${p}projector.lambda.delete`,
      `${p}projector.tools.search`,
      // InvokeTool and EndRun act as the signer's runtime (they never cancel).
      ...callProxy.filter((subject) => subject !== `${p}mcp.proxy.cancel`),
      ...ensureStreams,
    ],
    subscribe: [
      inbox,
      `${p}registry.oauth.refresh`,
      `${p}registry.approvals.token-decided`,
      `${p}mcp.proxy.tools.observed`,
      // The browser event stream (GET /v1/events) and InvokeTool's wait for a decision.
      `${p}agents.tools.changed.>`,
      `${p}mcp.events.server.>`,
      `${p}mcp.approvals.>`,
      `${p}mcp.inputs.>`,
      `${p}mcp.reviews.>`,
      taskEvents,
    ],
    allowResponses: replies,
  };
}

function projectorPermissions({ p, inbox, replies, ensureStreams }: SharedSubjects): NatsPermissions {
  const { events } = streamNames(p);
  return {
    publish: [
      `${p}agents.tools.changed.>`,
      ...ensureStreams,
      // The durable consumer: read it, create it (`CREATE.<stream>.<name>.<filter>`, servers
      // 2.9+) or update its ack wait (`CREATE.<stream>.<name>`), pull, acknowledge.
      `$JS.API.CONSUMER.INFO.${events}.${PROJECTOR_DURABLE}`,
      `$JS.API.CONSUMER.CREATE.${events}.${PROJECTOR_DURABLE}`,
      `$JS.API.CONSUMER.CREATE.${events}.${PROJECTOR_DURABLE}.>`,
      `$JS.API.CONSUMER.MSG.NEXT.${events}.${PROJECTOR_DURABLE}`,
      `$JS.ACK.${events}.${PROJECTOR_DURABLE}.>`,
    ],
    subscribe: [
      inbox,
      `${p}projector.agent-tools.get`,
      `${p}projector.lambda.set`,
      `${p}projector.lambda.delete`,
      `${p}projector.tools.search`,
    ],
    allowResponses: replies,
  };
}

function proxyPermissions(s: SharedSubjects): NatsPermissions {
  const { p, inbox, replies, ensureStreams, callProxy, callProgress, callLog, taskEvents } = s;
  const svc = p === '' ? PROXY_SERVICE : `${p.slice(0, -1)}-${PROXY_SERVICE}`;
  return {
    // Upstream notices (list changes, resource updates) of the subscriptions it holds: only the proxy says them.
    publish: [
      `${p}mcp.proxy.tools.observed`,
      callProgress,
      callLog,
      taskEvents,
      `${p}mcp.notices.>`,
      `${p}mcp.approvals.requested.*`,
      `${p}mcp.inputs.requested.*`,
      `${p}registry.oauth.refresh`,
      ...ensureStreams,
    ],
    subscribe: [
      inbox,
      ...callProxy,
      // Resources, prompts and completions of granted servers, for the agent endpoint.
      `${p}mcp.proxy.relay`,
      // The endpoint's holds of upstream subscriptions (any instance, then the holding one).
      `${p}mcp.proxy.watch`,
      `${p}mcp.proxy.*.watch`,
      // Cache invalidation of grants and documents.
      `${p}agents.tools.changed.>`,
      `${p}mcp.events.agent.changed.>`,
      `${p}mcp.events.server.>`,
      // The micro-service's discovery: $SRV.<verb>, $SRV.<verb>.<name>, $SRV.<verb>.<name>.<id>.
      '$SRV.PING',
      '$SRV.INFO',
      '$SRV.STATS',
      `$SRV.*.${svc}`,
      `$SRV.*.${svc}.*`,
    ],
    allowResponses: replies,
  };
}

/**
 * Not the runtime's user: a runtime may not announce decisions (it would forge them), the
 * endpoint applies a client's user's decision and says so, as the registry does an owner's.
 */
function endpointPermissions({
  p,
  inbox,
  replies,
  callProxy,
  callProgress,
  callLog,
  taskEvents,
}: SharedSubjects): NatsPermissions {
  return {
    publish: [
      ...callProxy,
      `${p}mcp.proxy.relay`,
      `${p}mcp.proxy.watch`,
      `${p}mcp.proxy.*.watch`,
      `${p}mcp.approvals.decided.*`,
      `${p}mcp.endpoint.>`,
      `${p}registry.approvals.token-decided`,
    ],
    subscribe: [
      inbox,
      callProgress,
      callLog,
      taskEvents,
      `${p}agents.tools.changed.>`,
      `${p}mcp.endpoint.>`,
      `${p}mcp.notices.>`,
    ],
    allowResponses: replies,
  };
}

function runtimePermissions({ p, inbox, callProxy, callProgress, taskEvents }: SharedSubjects): NatsPermissions {
  return {
    publish: callProxy,
    subscribe: [
      inbox,
      `${p}mcp.approvals.decided.*`,
      `${p}mcp.inputs.answered.*`,
      callProgress,
      taskEvents,
      `${p}agents.tools.changed.>`,
    ],
    allowResponses: false,
  };
}

export interface NatsServerConfigInput {
  users: readonly NatsUser[];
  /** The namespace prefix of the stack's subjects (`NATS_PREFIX`). */
  prefix?: string;
  host: string;
  port: number;
  /** JetStream's store directory. */
  storeDir: string;
  /** The HTTP monitoring port (`/healthz`), if any. */
  monitorPort?: number;
}

/** A quoted string of nats-server's config language (JSON escaping is a subset it accepts). */
const q = (s: string): string => JSON.stringify(s);
const list = (items: readonly string[]): string => `[${items.map(q).join(', ')}]`;

/**
 * The nats-server (2.9+) configuration of a stack: JetStream, and an `authorization` block with one
 * entry per user and its {@link natsPermissions}. No `no_auth_user`: an anonymous connection is
 * refused. With literal passwords the text holds secrets: write it with mode 0600.
 */
export function renderNatsServerConfig(input: NatsServerConfigInput): string {
  const users = natsUserEntries(input.users, input.prefix ?? '').map((e) => {
    const pass = typeof e.password === 'string' ? q(e.password) : `$${e.password.env}`;
    const r = e.permissions.allow_responses;
    const responses = r === undefined ? '' : `, allow_responses: { max: ${r.max}, expires: "${r.expires}" }`;
    return `    { user: ${q(e.user)}, password: ${pass}, permissions: { publish: { allow: ${list(e.permissions.publish.allow)} }, subscribe: { allow: ${list(e.permissions.subscribe.allow)} }${responses} } }`;
  });
  return [
    '# Generated from libs/config/src/nats-permissions.ts: the NATS users of the stack and what each may do.',
    `host: ${q(input.host)}`,
    `port: ${input.port}`,
    ...(input.monitorPort !== undefined ? [`http_port: ${input.monitorPort}`] : []),
    `jetstream { store_dir: ${q(input.storeDir)} }`,
    'authorization {',
    '  users = [',
    users.join(',\n'),
    '  ]',
    '}',
    '',
  ].join('\n');
}
