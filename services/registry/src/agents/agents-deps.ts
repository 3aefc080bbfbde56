import type { Bus } from '@mcpx/bus';
import type { ActionType } from '@mcpx/contracts';
import type { Db } from '@mcpx/db';
import type { RunAgents } from '@mcpx/shared-state';
import type { Logger } from '@mcpx/log';
import type { ProxyClient } from '@mcpx/proxy-client';
import type { AccountsRepository } from '../accounts/accounts.repository.js';
import type { HeldEntries } from '../audit/held-entries.js';
import type { BuiltinServers } from '../builtins/builtin-servers.js';
import type { McpServersRepository } from '../catalog/mcp-servers.repository.js';
import type { EventOutbox } from '../events/outbox.js';
import type { ActionHandler } from '../shared/action-handler.js';
import type { AccountQuotas } from '../shared/quotas.js';
import type { AgentsRepository } from './agents.repository.js';

/** What the agents room's actions use: the account's agents and signers, the servers they grant, the proxy that runs their calls. */
export interface AgentsDeps {
  db: Db;
  /** The transactions held open across the projector's or the task service's answer, bounded. */
  heldEntries: HeldEntries;
  accounts: AccountsRepository;
  agents: AgentsRepository;
  servers: McpServersRepository;
  bus: Bus;
  proxy: ProxyClient;
  log: Logger;
  /** Every JetStream event of an action is written with its commit and published after it. */
  outbox: EventOutbox;
  /** The agents each named run carried (Redis): an AGENT signer ends only runs of its agents. */
  runAgents?: RunAgents;
  /** Built-in servers lit by vendor connections (absent: none are). */
  builtins?: BuiltinServers;
  /** Per-account quotas (servers, agents). Absent: the defaults, uncounted. */
  quotas?: AccountQuotas;
}

/** The handler of an agents action. */
export type AgentsAction<T extends ActionType> = ActionHandler<T, AgentsDeps>;
