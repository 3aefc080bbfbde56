import { integerSetting, nonNegativeNumberSetting } from './settings.js';

/**
 * Quotas and rate limits: what one account, agent, signer or client address may hold or do, so
 * that no tenant can take a shared resource (discovery slots, Redis, a proxy instance) from the
 * others. Every number is configurable; 0 means "no limit" for that one.
 */
export interface RateSetting {
  /** Sustained rate (tokens per second); 0 = no limit. */
  ratePerSecond: number;
  /** Bucket size: how many may come at once after a quiet spell (at least one). */
  burst: number;
}

export interface QuotaSettings {
  /** MCP servers an account may hold (`QUOTA_SERVERS_PER_ACCOUNT`). */
  serversPerAccount: number;
  /** Agents an account may hold (`QUOTA_AGENTS_PER_ACCOUNT`). */
  agentsPerAccount: number;
  /** Approvals one agent may have waiting for a human at once (`QUOTA_PENDING_APPROVALS_PER_AGENT`); input requests of one agent waiting for a person are held to the same number. */
  pendingApprovalsPerAgent: number;
  /**
   * Approvals one account, across all its agents, may have waiting for a human at once
   * (`QUOTA_PENDING_APPROVALS_PER_ACCOUNT`). The per-agent cap alone lets an account with many
   * agents hold agents × 50 approvals of up to 64 KiB of shown arguments each in Redis, the Redis
   * that also keeps the nonces.
   */
  pendingApprovalsPerAccount: number;
  /**
   * Input requests one account, across all its agents, may have waiting for a person at once
   * (`QUOTA_PENDING_INPUTS_PER_ACCOUNT`). A setting of its own: an input request keeps the
   * server's questions (up to 8, a sampling request up to 64 KiB) and its sealed state, so one can
   * be many times the size of an approval, and the two are sized apart.
   */
  pendingInputsPerAccount: number;
  /**
   * Brokered tasks one account may have running at once, across every agent and proxy instance
   * (`QUOTA_RUNNING_TASKS_PER_ACCOUNT`; docs/tasks.md#bounds): each is a row polled until it ends.
   * A call that would create one more is refused before it is sent (`quota_exceeded`).
   */
  runningTasksPerAccount: number;
  /**
   * Bytes of waiting approvals (their stored records, shown arguments included) one account may
   * hold in Redis at once (`QUOTA_PENDING_APPROVAL_BYTES_PER_ACCOUNT`): the count alone lets an
   * account keep 1,000 × 64 KiB. A decided approval gives its bytes back and keeps no arguments.
   */
  pendingApprovalBytesPerAccount: number;
  /** Bytes of waiting input requests one account may hold in Redis at once (`QUOTA_PENDING_INPUT_BYTES_PER_ACCOUNT`). */
  pendingInputBytesPerAccount: number;
  /**
   * Approvals waiting across every account (`QUOTA_PENDING_APPROVALS_TOTAL`) and their bytes
   * (`QUOTA_PENDING_APPROVAL_BYTES_TOTAL`): one Redis holds them for all tenants (beside the
   * nonces, locks and limits), so the deployment refuses new ones before Redis runs out.
   */
  pendingApprovalsTotal: number;
  pendingApprovalBytesTotal: number;
  /** Input requests waiting across every account (`QUOTA_PENDING_INPUTS_TOTAL`) and their bytes (`QUOTA_PENDING_INPUT_BYTES_TOTAL`). */
  pendingInputsTotal: number;
  pendingInputBytesTotal: number;
  /** `GET /v1/events` streams an account may hold open at once, across instances (`QUOTA_EVENT_STREAMS_PER_ACCOUNT`). */
  eventStreamsPerAccount: number;
  /**
   * `GET /v1/events` streams one client address may hold open at once, across instances
   * (`QUOTA_EVENT_STREAMS_PER_ADDRESS`): any fresh key is an account, so the per-account bound
   * alone does not stop one client opening streams under ever new keys. Taken before the
   * envelope's signature is checked.
   */
  eventStreamsPerAddress: number;
  /** `GET /v1/events` streams one registry process holds open at once (`QUOTA_EVENT_STREAMS_PER_PROCESS`): each holds a socket and five subscriptions. */
  eventStreamsPerProcess: number;
  /**
   * OAuth sign-ins to the agent endpoint waiting for the owner's decision that one client (its
   * metadata document URL) may hold in one account (`QUOTA_PENDING_SIGN_INS_PER_CLIENT`): the
   * authorize endpoint is open to anyone, and one client must not take all 20 of an account's.
   */
  pendingSignInsPerClient: number;
  /** Pending sign-ins the requests of one client address may hold, across accounts (`QUOTA_PENDING_SIGN_INS_PER_ADDRESS`). */
  pendingSignInsPerAddress: number;
  /** Pending sign-ins the database holds, all accounts together (`QUOTA_PENDING_SIGN_INS`): refused before the table fills. */
  pendingSignIns: number;
  /** Discoveries of one account in flight at once, across instances (`QUOTA_DISCOVERIES_PER_ACCOUNT`). */
  discoveriesPerAccount: number;
  /** The total deadline of one discovery, connect to last page (`DISCOVERY_DEADLINE_MS`). */
  discoveryDeadlineMs: number;
  /** Consecutive failed re-probes after which a server is re-probed only when its owner refreshes it (`REPROBE_MAX_FAILURES`). */
  reprobeMaxFailures: number;
  /** Runs one proxy instance holds pools for (`PROXY_MAX_RUNS`). */
  runsPerProxy: number;
  /** Open remote connections of one proxy instance (`PROXY_MAX_CONNECTIONS`). */
  connectionsPerProxy: number;
  /** Actions per signer, checked after the signature (`RATE_ACTIONS_PER_SIGNER`, `RATE_ACTIONS_PER_SIGNER_BURST`). */
  actionsPerSigner: RateSetting;
  /** Requests per client address, checked before anything costly (`RATE_ACTIONS_PER_ADDRESS`, `RATE_ACTIONS_PER_ADDRESS_BURST`). */
  actionsPerAddress: RateSetting;
}

/** The defaults: far above what one real tenant needs, far below what exhausts a shared resource. */
export const DEFAULT_QUOTAS: Readonly<QuotaSettings> = Object.freeze({
  serversPerAccount: 200,
  agentsPerAccount: 10_000,
  pendingApprovalsPerAgent: 50,
  // A person reviews far fewer at once; at most 1,000 × 64 KiB = 64 MiB of shown arguments waiting per account.
  pendingApprovalsPerAccount: 1_000,
  // Four agents' full queues: a person answers questions one at a time, and an input request can weigh many approvals.
  pendingInputsPerAccount: 200,
  // One `tasks/get` per task per poll interval: 100 tasks at a 1 s interval is 100 polls a second for one account.
  runningTasksPerAccount: 100,
  // 128 approvals of the largest shown arguments, or 1,000 of 8 KiB.
  pendingApprovalBytesPerAccount: 8 * 1024 * 1024,
  pendingInputBytesPerAccount: 8 * 1024 * 1024,
  // Both kinds together at their byte caps fill half of the 256 MiB the deployments give Redis.
  pendingApprovalsTotal: 50_000,
  pendingApprovalBytesTotal: 64 * 1024 * 1024,
  pendingInputsTotal: 20_000,
  pendingInputBytesTotal: 64 * 1024 * 1024,
  eventStreamsPerAccount: 20,
  // Five accounts' worth: a person's consoles and tools, or a few people behind one NAT.
  eventStreamsPerAddress: 100,
  eventStreamsPerProcess: 2_000,
  // A client starts one sign-in per person and agent; a few pending at once is a person retrying.
  pendingSignInsPerClient: 5,
  // Under half an account's 20: a stranger needs three addresses to fill one account's slots.
  pendingSignInsPerAddress: 8,
  pendingSignIns: 10_000,
  discoveriesPerAccount: 4,
  discoveryDeadlineMs: 60_000,
  reprobeMaxFailures: 10,
  runsPerProxy: 10_000,
  connectionsPerProxy: 2_000,
  actionsPerSigner: Object.freeze({ ratePerSecond: 20, burst: 80 }),
  actionsPerAddress: Object.freeze({ ratePerSecond: 50, burst: 100 }),
});

function count(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  return integerSetting(env, name, {
    fallback,
    min: 0,
    message: `${name} must be a non-negative integer (0 = no limit)`,
  });
}

function rate(env: NodeJS.ProcessEnv, name: string, fallback: RateSetting): RateSetting {
  const raw = env[name];
  const ratePerSecond = nonNegativeNumberSetting(
    env,
    name,
    fallback.ratePerSecond,
    `${name} must be a non-negative number (0 = no limit)`,
  );
  // An unset burst follows the rate (twice a second's worth), so setting only the rate is coherent.
  const given = env[`${name}_BURST`];
  const burst =
    given === undefined || given === ''
      ? raw === undefined || raw === ''
        ? fallback.burst
        : Math.max(1, Math.ceil(ratePerSecond * 2))
      : count(env, `${name}_BURST`, fallback.burst);
  if (ratePerSecond > 0 && burst < 1) throw new Error(`${name}_BURST must be at least 1`);
  return { ratePerSecond, burst };
}

/** Reads the quota settings; throws naming the variable of a malformed value. */
export function parseQuotas(env: NodeJS.ProcessEnv): QuotaSettings {
  const d = DEFAULT_QUOTAS;
  return {
    serversPerAccount: count(env, 'QUOTA_SERVERS_PER_ACCOUNT', d.serversPerAccount),
    agentsPerAccount: count(env, 'QUOTA_AGENTS_PER_ACCOUNT', d.agentsPerAccount),
    pendingApprovalsPerAgent: count(env, 'QUOTA_PENDING_APPROVALS_PER_AGENT', d.pendingApprovalsPerAgent),
    pendingApprovalsPerAccount: count(env, 'QUOTA_PENDING_APPROVALS_PER_ACCOUNT', d.pendingApprovalsPerAccount),
    pendingInputsPerAccount: count(env, 'QUOTA_PENDING_INPUTS_PER_ACCOUNT', d.pendingInputsPerAccount),
    runningTasksPerAccount: count(env, 'QUOTA_RUNNING_TASKS_PER_ACCOUNT', d.runningTasksPerAccount),
    pendingApprovalBytesPerAccount: count(
      env,
      'QUOTA_PENDING_APPROVAL_BYTES_PER_ACCOUNT',
      d.pendingApprovalBytesPerAccount,
    ),
    pendingInputBytesPerAccount: count(env, 'QUOTA_PENDING_INPUT_BYTES_PER_ACCOUNT', d.pendingInputBytesPerAccount),
    pendingApprovalsTotal: count(env, 'QUOTA_PENDING_APPROVALS_TOTAL', d.pendingApprovalsTotal),
    pendingApprovalBytesTotal: count(env, 'QUOTA_PENDING_APPROVAL_BYTES_TOTAL', d.pendingApprovalBytesTotal),
    pendingInputsTotal: count(env, 'QUOTA_PENDING_INPUTS_TOTAL', d.pendingInputsTotal),
    pendingInputBytesTotal: count(env, 'QUOTA_PENDING_INPUT_BYTES_TOTAL', d.pendingInputBytesTotal),
    eventStreamsPerAccount: count(env, 'QUOTA_EVENT_STREAMS_PER_ACCOUNT', d.eventStreamsPerAccount),
    eventStreamsPerAddress: count(env, 'QUOTA_EVENT_STREAMS_PER_ADDRESS', d.eventStreamsPerAddress),
    eventStreamsPerProcess: count(env, 'QUOTA_EVENT_STREAMS_PER_PROCESS', d.eventStreamsPerProcess),
    pendingSignInsPerClient: count(env, 'QUOTA_PENDING_SIGN_INS_PER_CLIENT', d.pendingSignInsPerClient),
    pendingSignInsPerAddress: count(env, 'QUOTA_PENDING_SIGN_INS_PER_ADDRESS', d.pendingSignInsPerAddress),
    pendingSignIns: count(env, 'QUOTA_PENDING_SIGN_INS', d.pendingSignIns),
    discoveriesPerAccount: count(env, 'QUOTA_DISCOVERIES_PER_ACCOUNT', d.discoveriesPerAccount),
    discoveryDeadlineMs: count(env, 'DISCOVERY_DEADLINE_MS', d.discoveryDeadlineMs),
    reprobeMaxFailures: count(env, 'REPROBE_MAX_FAILURES', d.reprobeMaxFailures),
    runsPerProxy: count(env, 'PROXY_MAX_RUNS', d.runsPerProxy),
    connectionsPerProxy: count(env, 'PROXY_MAX_CONNECTIONS', d.connectionsPerProxy),
    actionsPerSigner: rate(env, 'RATE_ACTIONS_PER_SIGNER', d.actionsPerSigner),
    actionsPerAddress: rate(env, 'RATE_ACTIONS_PER_ADDRESS', d.actionsPerAddress),
  };
}
