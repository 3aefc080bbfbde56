import type { Bus } from '@mcpx/bus';
import type { ServerStatus, Transport } from '@mcpx/contracts';
import type { QuotaSettings } from '@mcpx/config';
import type { CredentialReader, ServerCredentials } from '@mcpx/stored';
import type { Database } from '@mcpx/db';
import type { RemoteTool } from '@mcpx/domain';
import type { LeaseQuota, SingleFlight } from '@mcpx/shared-state';
import type { Logger } from '@mcpx/log';
import type { EraVerdict } from '@mcpx/mcp-client';
import type { Meter, Tracer } from '@opentelemetry/api';
import type { Kysely } from 'kysely';
import type { McpServerRecord, McpServersRepository } from '../catalog/mcp-servers.repository.js';
import { TOOL_LIMITS } from '../catalog/remote-tools.js';
import type { ToolOverrides, ToolPermissionsRepository } from '../catalog/tool-permissions.repository.js';
import type { EventOutbox } from '../events/outbox.js';
import type { WantedChange } from '../review/pin-policy.js';

/** Bounds on what a remote server may hand us (its data is untrusted). */
export const DISCOVERY_LIMITS = {
  connectTimeoutMs: 30_000,
  maxPages: 50,
  maxTools: TOOL_LIMITS.maxTools,
  maxToolNameLength: TOOL_LIMITS.maxToolNameLength,
  /**
   * Decompressed bytes of every response body one discovery reads, together (connect, renewals,
   * every page): each body is bounded on its own, so this is what stops many pages that are each
   * under that bound.
   */
  maxTotalBytes: 32 * 1024 * 1024,
  /** Discoveries that may talk to remote servers at once, per registry instance (the rest queue). */
  concurrency: 16,
} as const;

/**
 * Whether a 401 asks for OAuth (RFC 9728 protected-resource metadata in `WWW-Authenticate`, the
 * MCP authorization spec's signal). Only then is the server `auth_required`: a plain 401 means
 * the configured header is wrong or missing, which the owner fixes, so it is an `error`.
 */
export function wantsOAuth(wwwAuthenticate: string | undefined): boolean {
  return wwwAuthenticate !== undefined && /resource_metadata\s*=/i.test(wwwAuthenticate);
}

export interface DiscoveryDeps {
  /**
   * Leases (Redis) that bound an account's discoveries in flight across every instance to
   * `quotas.discoveriesPerAccount` (absent: per instance only).
   */
  accountLeases?: LeaseQuota;
  servers: McpServersRepository;
  /** The headers to reach a custom server, read from the rows the proxy reads them from. */
  credentials: CredentialReader;
  bus: Bus;
  /** Where each recorded discovery's event is written, in the transaction of the record, and published after it. */
  outbox: EventOutbox;
  singleFlight: SingleFlight;
  log: Logger;
  tracer: Tracer;
  meter: Meter;
  /** Builds the fetch used to reach remote servers (outbound safety lives there). */
  fetch?: typeof fetch;
  /** Base of the re-probe backoff (default `REPROBE_BACKOFF`.baseMs). */
  reprobeBaseMs?: number;
  /** Floor of the re-list of a list in use when it expires (default `RELIST`.floorMs). */
  relistFloorMs?: number;
  /** Bound on concurrent remote discoveries of this instance (default {@link DISCOVERY_LIMITS}.concurrency). */
  concurrency?: number;
  /**
   * An oauth server's token renewed before a discovery when it is about to expire: true when it
   * was (the credentials are read again). A `CredentialError` is the discovery's error.
   */
  oauthFreshen?: (server: McpServerRecord, held: ServerCredentials) => Promise<boolean>;
  /**
   * After a 401 on a custom server: headers with a new OAuth client credentials token to try once
   * more, or null when the server does not use that grant (`challenge`: the 401's
   * `resource_metadata`). A refused new token is an `error`: nobody signs in for such a server.
   */
  oauthRenew?: (
    server: McpServerRecord,
    used: Record<string, string>,
    challenge: URL | undefined,
  ) => Promise<Record<string, string> | null>;
  /** The owner's per-tool permission overrides, carried on every discovery event. */
  permissions?: ToolPermissionsRepository;
  /**
   * Quotas (`config.quotas`; default `DEFAULT_QUOTAS`): `discoveriesPerAccount` of one account
   * run at once on this instance (the rest of that account's wait, holding none of the instance's
   * slots), `discoveryDeadlineMs` bounds one discovery from connect to last page, and after
   * `reprobeMaxFailures` failures in a row the re-prober leaves the server until its owner refreshes it.
   */
  quotas?: Pick<QuotaSettings, 'discoveriesPerAccount' | 'discoveryDeadlineMs' | 'reprobeMaxFailures'>;
  /**
   * Contract pinning: who hears of a change held for review (a pinned server's discoveries are
   * recorded in the outbox's transaction). Absent: pins are not applied (tests of discovery alone).
   */
  pins?: { requested: (server: McpServerRecord, changes: WantedChange[]) => void };
}

/**
 * What a discovery reads and records, and how it authenticates. The default is the account's
 * mcp_servers rows; built-in servers bring their own, and so share the single flight, the
 * concurrency bound, the re-probe backoff, the span and the metrics of custom servers.
 */
export interface DiscoveryTarget {
  /** `custom` or `builtin`, on spans and metrics. */
  readonly kind: string;
  find(account: string, name: string): Promise<McpServerRecord | null>;
  /** Headers to connect with; a `CredentialError` is recorded as the discovery's error. */
  headers(server: McpServerRecord): Promise<Record<string, string>>;
  /**
   * After a 401: headers with a renewed credential to try once more, or null when it cannot be
   * renewed (a `CredentialError` when renewing failed otherwise). A target with `renew` has
   * every 401 mean `auth_required`; without, only one that asks for OAuth does.
   */
  renew?(server: McpServerRecord, used: Record<string, string>): Promise<Record<string, string> | null>;
  /**
   * Records the outcome (see {@link McpServersRepository.recordDiscovery}) in `trx`, the
   * transaction its event is written in; null when the server went meanwhile.
   */
  record(
    server: McpServerRecord,
    status: ServerStatus,
    tools: { list: RemoteTool[]; hash: string; generation: number } | undefined,
    nextProbeAt: Date | null,
    trx: Kysely<Database>,
  ): Promise<McpServerRecord | null>;
  /** The owner's per-tool overrides, carried on the discovery event (read in `trx` when given). */
  overrides(account: string, serverId: string, trx?: Kysely<Database>): Promise<ToolOverrides | undefined>;
}

/** What one exchange with a server (or a proxy's report of one) came to, before it is recorded. */
export interface ProbeOutcome {
  tools?: RemoteTool[];
  transport?: Transport;
  /** Listed tools not kept (see `screenTools`). */
  skipped?: Array<{ name: string; reason: string }>;
  /** The verdict the connection ran on, when known. */
  verdict?: EraVerdict;
  /** The list's freshness hints, when the server gave them (bounded). */
  hints?: { ttlMs?: number; cacheScope?: 'public' | 'private' };
  error?: string;
  /** The failure in words with what to try (`explainConnectFailure`), when it can be said. */
  summary?: string;
  /** A failure's stable code (see `discoveryErrorCode`), for spans and metrics. */
  code?: string;
  authRequired?: boolean;
}

/** How a discovery came by its era verdict: a stored one reused, a fresh probe, or a stored one that failed and was probed again. */
export type VerdictOutcome = 'reused' | 'probed' | 'reprobed';
