import type { Tracer } from '@opentelemetry/api';
import type { Bus } from '@mcpx/bus';
import type { ActionRequest, ActionResponse, ActionType } from '@mcpx/contracts';
import type { OutboundPolicy } from '@mcpx/config';
import type { Db } from '@mcpx/db';
import type { ToolNameStyle } from '@mcpx/domain';
import type { ApprovalStore, InputStore, RunAgents } from '@mcpx/locks';
import type { Logger } from '@mcpx/log';
import type { ProxyClient } from '@mcpx/proxy-client';
import type { Discovery } from '../discovery/discovery.js';
import type { EventOutbox } from '../events/outbox.js';
import type { BuiltinServers } from '../builtins/builtin-servers.js';
import type { OAuthService } from '../credentials/oauth/oauth-service.js';
import type { AccountsRepository, SignerRole } from '../repositories/accounts.repository.js';
import type { AgentsRepository } from '../repositories/agents.repository.js';
import type { McpServersRepository } from '../repositories/mcp-servers.repository.js';
import type { SecretsRepository } from '../repositories/secrets.repository.js';
import type { ToolPermissionsRepository } from '../repositories/tool-permissions.repository.js';

/** Who is acting: the account, and the signer with its role in it. */
export interface Caller {
  account: string;
  signer: string;
  role: SignerRole;
}

/** Everything an action handler may use; built once in main.ts. */
export interface ActionDeps {
  db: Db;
  accounts: AccountsRepository;
  agents: AgentsRepository;
  servers: McpServersRepository;
  secrets: SecretsRepository;
  discovery: Discovery;
  bus: Bus;
  proxy: ProxyClient;
  log: Logger;
  tracer: Tracer;
  style: ToolNameStyle;
  outbound: OutboundPolicy;
  /** The owner's per-tool permission overrides. */
  permissions: ToolPermissionsRepository;
  /** Approvals of always_ask calls (Redis, shared with the proxy). */
  approvals: ApprovalStore;
  /** Input requests of calls whose servers asked a question (Redis, shared with the proxy); absent: none are answered here. */
  inputs?: InputStore;
  /** The agents each named run carried (Redis): an AGENT signer ends only runs of its agents. */
  runAgents?: RunAgents;
  /** OAuth 2.1 for servers with `config.auth: 'oauth'` (absent: such servers stay `auth_required`). */
  oauth?: OAuthService;
  /** Built-in servers lit by vendor connections (absent: none are). */
  builtins?: BuiltinServers;
  /**
   * Contract pinning (`PIN_DEFAULT`, `PIN_WRITERS_MAY_REVIEW`): the pin mode of a new server that
   * names none, and whether WRITER signers may accept or reject tool changes. Absent: off, OWNERs only.
   */
  pins?: { defaultMode: 'off' | 'review' | 'strict'; writersMayReview: boolean };
  /** Every JetStream event of an action is written with its commit and published after it. */
  outbox: EventOutbox;
}

/** An action as it arrives in a verified envelope: a type and fields nobody has checked yet. */
export type Action = { type: string } & Record<string, unknown>;

/**
 * An action of type `T` as its handler receives it: the field names of the action map's request,
 * each value still `unknown`. The wire is never trusted, so a handler validates every field it
 * reads (and tsc refuses a read of a field the map does not name).
 */
export type ActionInput<T extends ActionType> = { readonly type: T } & { readonly [K in keyof ActionRequest<T>]?: unknown };

/** The handler of action `T`: what it answers is the action map's response of `T`. */
export type ActionHandler<T extends ActionType> = (deps: ActionDeps, caller: Caller, action: ActionInput<T>) => Promise<ActionResponse<T>>;
