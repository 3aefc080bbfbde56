/**
 * NATS subjects and JetStream names. Every name takes an optional namespace prefix (`NATS_PREFIX`)
 * so that several deployments, or parallel test runs, can share one NATS server without
 * overlapping streams. With an empty prefix the names are the plain ones of docs/bus.md#subjects.
 */

/** Grammar of tokens that go into a subject: account ids, agent ids, server names, run ids. */
const TOKEN_RE = /^[A-Za-z0-9_-]{1,128}$/;

/** Throws when a value cannot be a single subject token (no dots, wildcards or spaces). */
export function subjectToken(value: string): string {
  if (!TOKEN_RE.test(value)) throw new Error(`not a valid subject token: ${JSON.stringify(value.slice(0, 40))}`);
  return value;
}

export interface Subjects {
  readonly prefix: string;
  /** JetStream stream `MCP_EVENTS`, subjects `mcp.events.>`. */
  readonly mcpEventsStream: string;
  /** JetStream stream `AGENT_TOOLS`, subjects `agents.tools.changed.>`. */
  readonly agentToolsStream: string;
  /** `mcp.events.>` */
  readonly mcpEventsAll: string;
  /** `mcp.events.server.discovered.<acct>.<server>` */
  serverDiscovered(account: string, server: string): string;
  /** `mcp.events.server.deleted.<acct>.<server>` */
  serverDeleted(account: string, server: string): string;
  /** `mcp.events.agent.changed.<acct>.<agent>` */
  agentChanged(account: string, agent: string): string;
  /** `mcp.events.agent.changed.>` */
  readonly agentChangedAll: string;
  /** `mcp.events.server.>` */
  readonly serverEventsAll: string;
  /** `agents.tools.changed.<acct>.<agent>` */
  agentToolsChanged(account: string, agent: string): string;
  /** `agents.tools.changed.>` (or one account's: `agents.tools.changed.<acct>.>`) */
  agentToolsChangedAll(account?: string): string;
  /** `mcp.proxy.call` — queue group `proxy` */
  readonly proxyCall: string;
  /** `mcp.proxy.<instance>.call` — the sticky route of a run */
  proxyInstanceCall(instance: string): string;
  /** `mcp.proxy.cancel` */
  readonly proxyCancel: string;
  /** `mcp.proxy.relay` — queue group `proxy`: resources, prompts, completions of a granted server (./relay.ts) */
  readonly proxyRelay: string;
  /**
   * `mcp.proxy.calls.held` — request to every instance (no queue group), payload {@link ProxyCancel}'s
   * shape: the instance working on the call answers `{instance}`, the others stay silent. A caller
   * asks during a long call, so that a proxy that died mid-call costs seconds, not the call timeout.
   */
  readonly proxyCallHeld: string;
  /**
   * `mcp.calls.progress.<acct>.<run>.<callId>` — a call's progress, published by the proxy running it
   * (a call sent with `progress: true`), heard by its caller while it waits (docs/call.md#progress).
   */
  callProgress(account: string, run: string, callId: string): string;
  /**
   * `mcp.calls.log.<acct>.<run>.<callId>` — a call's log messages, published by the proxy running it
   * (a call sent with a `logLevel`), heard by its caller while it waits (docs/endpoint.md#logging).
   */
  callLog(account: string, run: string, callId: string): string;
  /** `mcp.runs.ended.<acct>.<run>` */
  runEnded(account: string, run: string): string;
  /** `mcp.runs.ended.>` */
  readonly runEndedAll: string;
  /** `mcp.proxy.tools.observed` — quiet discovery from a proxy's connection */
  readonly toolsObserved: string;
  /** `projector.agent-tools.get` — request/reply read of an agent's tool set */
  readonly projectorAgentTools: string;
  /** `projector.lambda.set` — request/reply: save an agent's lambda (SetLambdaTool) */
  readonly projectorLambdaSet: string;
  /** `projector.lambda.delete` — request/reply: delete an agent's lambda (DeleteLambdaTool) */
  readonly projectorLambdaDelete: string;
  /** `projector.tools.search` — request/reply: rank the account's tools (SearchTools) */
  readonly projectorToolsSearch: string;
  /**
   * `mcp.approvals.requested.<acct>` — core NATS publish (at most once) by the proxy when an
   * `always_ask` call stops for a human. A notification only: the approvals themselves live in
   * Redis and `ListApprovals` is the source of truth, so a missed event loses nothing.
   */
  approvalRequested(account: string): string;
  /**
   * `mcp.approvals.decided.<acct>` — core NATS publish (at most once) by the registry when an
   * owner approves or denies a call. A notification only, like `approvalRequested`.
   */
  approvalDecided(account: string): string;
  /** `mcp.approvals.*.<acct>` — both approval notifications of one account. */
  approvalEvents(account: string): string;
  /**
   * `mcp.inputs.requested.<acct>` — core NATS publish (at most once) by the proxy when a call
   * stops for input. A notification only: input requests live in Redis and `ListInputRequests`
   * is the source of truth.
   */
  inputRequested(account: string): string;
  /** `mcp.inputs.answered.<acct>` — core NATS publish (at most once) by the registry when a person answered. */
  inputAnswered(account: string): string;
  /** `mcp.inputs.*.<acct>` — both input notifications of one account. */
  inputEvents(account: string): string;
  /**
   * `mcp.reviews.requested.<acct>` — core NATS publish (at most once) by the registry when a
   * discovery of a pinned server holds a changed or new contract for review. A notification
   * only: `ListToolChanges` is the source of truth.
   */
  reviewRequested(account: string): string;
  /** `registry.oauth.refresh` — request/reply: a proxy asks the registry to refresh an oauth server's token */
  readonly registryOAuthRefresh: string;
  /**
   * `registry.approvals.token-decided` — request/reply (queue group `registry`), the endpoint's
   * only: an approval a token holder decided through the endpoint, for the registry to audit (it
   * reads the decision from the approval store). Request `TokenDecisionAudit` (endpoint-messages.ts)
   * `{account, approvalId}`; reply value `{audit: 'recorded' | 'already'}` (idempotent by the id).
   */
  readonly registryTokenDecisionAudit: string;
  /**
   * `mcp.endpoint.<instance>.answer` — request/reply between endpoint instances: a 2025 client's
   * answer to a question the instance `<instance>` asked during a call it holds, posted to another
   * instance. Request `{token, id, result?}` (the token's id, never the token); reply value `{taken}`.
   */
  endpointAnswer(instance: string): string;
  /**
   * `mcp.endpoint.clients.declared` — core NATS publish (at most once) by the endpoint instance
   * that saw a 2025 client's `initialize`: `{instance, token, elicitation, sampling}`, for the other
   * instances (Redis holds the same for an instance that missed it).
   */
  readonly endpointClientsDeclared: string;
  /** `mcp.endpoint.clients.log-level` — the log level a 2025 client of a token set, told by the instance it reached to the others (`ClientLogLevel`). */
  readonly endpointClientsLogLevel: string;
  /** `mcp.events.server.*.<acct>.*` — both server events of one account. */
  serverEventsOf(account: string): string;
  /**
   * `mcp.tasks.<acct>.<task>` — core NATS publish by the proxy instance polling a task, at each
   * change of its state or status message: a `TaskEvent` (tasks.ts). A notification only: the
   * task's row is the source of truth (`mcp.proxy.tasks` reads it), so a missed event loses nothing.
   */
  taskStatus(account: string, task: string): string;
  /** `mcp.tasks.<acct>.>` — every task event of one account. */
  taskEventsOf(account: string): string;
  /** `mcp.tasks.>` — every task event of every account (the registry's audit of tasks, queue group `registry`). */
  readonly taskEventsAll: string;
  /**
   * `mcp.proxy.tasks` — request/reply (queue group `proxy`): the runtime (and the registry) read,
   * list, cancel a task and take its result: a `TaskRequest`, answered `{ok, value | error}` (tasks.ts).
   */
  readonly proxyTasks: string;
  /**
   * `mcp.proxy.watch` — request/reply (queue group `proxy`): the endpoint's hold of an upstream
   * subscription, a `WatchRequest` (watches.ts); renewals and the release go to the instance that
   * answered, {@link proxyInstanceWatch}.
   */
  readonly proxyWatch: string;
  /** `mcp.proxy.<instance>.watch` — the same request, to the instance that holds the subscription. */
  proxyInstanceWatch(instance: string): string;
  /**
   * `mcp.notices.<acct>.<server>` — core NATS publish by the proxy holding an upstream
   * subscription: an `UpstreamNotice` (watches.ts), a list change or a resource update, coalesced.
   * Only the proxy publishes here, only the endpoint listens.
   */
  upstreamNotice(account: string, server: string): string;
  /** `mcp.notices.>` — every upstream notice. */
  readonly upstreamNoticesAll: string;

  // The parsers, each beside its builder's grammar: a subject of another shape, another prefix, or
  // a token outside the token grammar parses to null (never a guess by position).

  /** Parses `mcp.events.server.discovered|deleted.<acct>.<server>` ({@link serverDiscovered}, {@link serverDeleted}). */
  readonly parseServerEvent: (
    subject: string,
  ) => { kind: 'discovered' | 'deleted'; account: string; server: string } | null;
  /** Parses `mcp.events.agent.changed.<acct>.<agent>` ({@link agentChanged}). */
  readonly parseAgentChanged: (subject: string) => { account: string; agent: string } | null;
  /** Parses `agents.tools.changed.<acct>.<agent>` ({@link agentToolsChanged}). */
  readonly parseAgentToolsChanged: (subject: string) => { account: string; agent: string } | null;
  /** Parses `mcp.approvals.requested|decided.<acct>` ({@link approvalRequested}, {@link approvalDecided}). */
  readonly parseApprovalEvent: (subject: string) => { kind: 'requested' | 'decided'; account: string } | null;
  /** Parses `mcp.inputs.requested|answered.<acct>` ({@link inputRequested}, {@link inputAnswered}). */
  readonly parseInputEvent: (subject: string) => { kind: 'requested' | 'answered'; account: string } | null;
  /** Parses `mcp.endpoint.<instance>.answer` ({@link endpointAnswer}). */
  readonly parseEndpointAnswer: (subject: string) => { instance: string } | null;
}

/**
 * The tokens of `subject` after `head` (which ends with a dot), when there are exactly `count`
 * and each is a valid token; else null.
 */
function tokensAfter(subject: string, head: string, count: number): string[] | null {
  if (!subject.startsWith(head)) return null;
  const tokens = subject.slice(head.length).split('.');
  return tokens.length === count && tokens.every((t) => TOKEN_RE.test(t)) ? tokens : null;
}

/** `token` when it is one of `kinds`, else null. */
function kindOf<K extends string>(token: string | undefined, kinds: readonly K[]): K | null {
  return kinds.find((k) => k === token) ?? null;
}

const SERVER_EVENT_KINDS = ['discovered', 'deleted'] as const;
const APPROVAL_EVENT_KINDS = ['requested', 'decided'] as const;
const INPUT_EVENT_KINDS = ['requested', 'answered'] as const;

/** Queue group names: one member of each group answers a request. */
export const QueueGroups = {
  proxy: 'proxy',
  projector: 'projector',
  registry: 'registry',
} as const;

export function makeSubjects(prefix = ''): Subjects {
  if (prefix !== '' && !/^[A-Za-z0-9_-]+\.$/.test(prefix)) {
    throw new Error('NATS_PREFIX must be letters, digits, _ or - followed by a dot, e.g. "t1."');
  }
  const p = prefix;
  const streamPrefix = p === '' ? '' : p.slice(0, -1).toUpperCase().replace(/-/g, '_') + '_';
  const t = subjectToken;
  return {
    prefix: p,
    mcpEventsStream: `${streamPrefix}MCP_EVENTS`,
    agentToolsStream: `${streamPrefix}AGENT_TOOLS`,
    mcpEventsAll: `${p}mcp.events.>`,
    serverDiscovered: (a, s) => `${p}mcp.events.server.discovered.${t(a)}.${t(s)}`,
    serverDeleted: (a, s) => `${p}mcp.events.server.deleted.${t(a)}.${t(s)}`,
    agentChanged: (a, g) => `${p}mcp.events.agent.changed.${t(a)}.${t(g)}`,
    agentChangedAll: `${p}mcp.events.agent.changed.>`,
    serverEventsAll: `${p}mcp.events.server.>`,
    agentToolsChanged: (a, g) => `${p}agents.tools.changed.${t(a)}.${t(g)}`,
    agentToolsChangedAll: (a) =>
      a === undefined ? `${p}agents.tools.changed.>` : `${p}agents.tools.changed.${t(a)}.>`,
    proxyCall: `${p}mcp.proxy.call`,
    proxyInstanceCall: (i) => `${p}mcp.proxy.${t(i)}.call`,
    proxyCancel: `${p}mcp.proxy.cancel`,
    proxyRelay: `${p}mcp.proxy.relay`,
    proxyCallHeld: `${p}mcp.proxy.calls.held`,
    callProgress: (a, r, c) => `${p}mcp.calls.progress.${t(a)}.${t(r)}.${t(c)}`,
    callLog: (a, r, c) => `${p}mcp.calls.log.${t(a)}.${t(r)}.${t(c)}`,
    runEnded: (a, r) => `${p}mcp.runs.ended.${t(a)}.${t(r)}`,
    runEndedAll: `${p}mcp.runs.ended.>`,
    toolsObserved: `${p}mcp.proxy.tools.observed`,
    projectorAgentTools: `${p}projector.agent-tools.get`,
    projectorLambdaSet: `${p}projector.lambda.set`,
    projectorLambdaDelete: `${p}projector.lambda.delete`,
    projectorToolsSearch: `${p}projector.tools.search`,
    approvalRequested: (a) => `${p}mcp.approvals.requested.${t(a)}`,
    approvalDecided: (a) => `${p}mcp.approvals.decided.${t(a)}`,
    approvalEvents: (a) => `${p}mcp.approvals.*.${t(a)}`,
    inputRequested: (a) => `${p}mcp.inputs.requested.${t(a)}`,
    inputAnswered: (a) => `${p}mcp.inputs.answered.${t(a)}`,
    inputEvents: (a) => `${p}mcp.inputs.*.${t(a)}`,
    reviewRequested: (a) => `${p}mcp.reviews.requested.${t(a)}`,
    registryOAuthRefresh: `${p}registry.oauth.refresh`,
    registryTokenDecisionAudit: `${p}registry.approvals.token-decided`,
    endpointAnswer: (i) => `${p}mcp.endpoint.${t(i)}.answer`,
    endpointClientsDeclared: `${p}mcp.endpoint.clients.declared`,
    endpointClientsLogLevel: `${p}mcp.endpoint.clients.log-level`,
    serverEventsOf: (a) => `${p}mcp.events.server.*.${t(a)}.*`,
    taskStatus: (a, k) => `${p}mcp.tasks.${t(a)}.${t(k)}`,
    taskEventsOf: (a) => `${p}mcp.tasks.${t(a)}.>`,
    taskEventsAll: `${p}mcp.tasks.>`,
    proxyTasks: `${p}mcp.proxy.tasks`,
    proxyWatch: `${p}mcp.proxy.watch`,
    proxyInstanceWatch: (i) => `${p}mcp.proxy.${t(i)}.watch`,
    // A server name is one token (docs/names.md#server-names: `[a-z0-9_-]`), like every other
    // name here: a dot, wildcard or space throws rather than being rewritten into another name's token.
    upstreamNotice: (a, s) => `${p}mcp.notices.${t(a)}.${t(s)}`,
    upstreamNoticesAll: `${p}mcp.notices.>`,
    ...subjectParsers(p),
  };
}

type SubjectParsers = Pick<
  Subjects,
  | 'parseServerEvent'
  | 'parseAgentChanged'
  | 'parseAgentToolsChanged'
  | 'parseApprovalEvent'
  | 'parseInputEvent'
  | 'parseEndpointAnswer'
>;

/** Reads the tokens of a subject back (under prefix `p`): null for a subject of another shape. */
function subjectParsers(p: string): SubjectParsers {
  return {
    parseServerEvent: (subject) => {
      const [kind, account, server] = tokensAfter(subject, `${p}mcp.events.server.`, 3) ?? [];
      const k = kindOf(kind, SERVER_EVENT_KINDS);
      return k === null || account === undefined || server === undefined ? null : { kind: k, account, server };
    },
    parseAgentChanged: (subject) => {
      const [account, agent] = tokensAfter(subject, `${p}mcp.events.agent.changed.`, 2) ?? [];
      return account === undefined || agent === undefined ? null : { account, agent };
    },
    parseAgentToolsChanged: (subject) => {
      const [account, agent] = tokensAfter(subject, `${p}agents.tools.changed.`, 2) ?? [];
      return account === undefined || agent === undefined ? null : { account, agent };
    },
    parseApprovalEvent: (subject) => {
      const [kind, account] = tokensAfter(subject, `${p}mcp.approvals.`, 2) ?? [];
      const k = kindOf(kind, APPROVAL_EVENT_KINDS);
      return k === null || account === undefined ? null : { kind: k, account };
    },
    parseInputEvent: (subject) => {
      const [kind, account] = tokensAfter(subject, `${p}mcp.inputs.`, 2) ?? [];
      const k = kindOf(kind, INPUT_EVENT_KINDS);
      return k === null || account === undefined ? null : { kind: k, account };
    },
    parseEndpointAnswer: (subject) => {
      const [instance, answer] = tokensAfter(subject, `${p}mcp.endpoint.`, 2) ?? [];
      return instance === undefined || answer !== 'answer' ? null : { instance };
    },
  };
}
