import { ErrorCodes, WireError, invalidInput, type AgentView } from '@mcpx/contracts';
import type { AgentRecord } from './agents.repository.js';
import { validateAgentInputs, validateAgentName, validateGrantList } from './agent-validation.js';
import { accountQuotas } from '../shared/quotas.js';
import { auditBy, recordAudit } from '../audit/audit-log.js';
import { auditAgent } from './agent-audit.js';
import type { OutboxEvent } from '../events/outbox.js';
import { agentChanged } from './agent-events.js';
import type { AgentsAction, AgentsDeps } from './agents-deps.js';

export function agentView(agent: AgentRecord): AgentView {
  return {
    id: agent.id,
    name: agent.name,
    definition: agent.definition,
    grants: { mcpServers: agent.definition.mcpServers },
    createdAt: agent.createdAt.toISOString(),
    updatedAt: agent.updatedAt.toISOString(),
  };
}

/** The agent-changed event of an agent's revision (its message id makes a second publish a no-op). */
export function agentChangedEvent(deps: Pick<AgentsDeps, 'bus'>, agent: AgentRecord): OutboxEvent {
  return agentChanged(deps.bus.subjects, agent);
}

/** Each granted name must be a server of the caller's account. */
async function checkGrants(deps: AgentsDeps, account: string, grants: string[]): Promise<void> {
  const existing = await deps.servers.existingNames(account, grants);
  // A built-in lit by a vendor connection may be granted like a server of the account's own.
  for (const b of (await deps.builtins?.lit(account)) ?? []) existing.add(b.name);
  const missing = grants.findIndex((g) => !existing.has(g));
  if (missing >= 0) throw invalidInput(`definition.mcpServers[${missing}]`, `no MCP server named ${grants[missing]}`);
}

/** The caller's agent named by `ref` (its id or name), or `not_found` naming the field. */
export async function findAgent(deps: Pick<AgentsDeps, 'agents'>, account: string, ref: unknown): Promise<AgentRecord> {
  if (typeof ref !== 'string' || ref === '' || ref.length > 128)
    throw invalidInput('agent', 'must name an agent (id or name)');
  const agent = await deps.agents.find(account, ref);
  if (agent === null) throw new WireError(ErrorCodes.notFound, `agent: no agent ${ref}`, { field: 'agent' });
  return agent;
}

export const createAgent: AgentsAction<'CreateAgent'> = async (deps, caller, action) => {
  const name = validateAgentName(action.name);
  const grants = validateGrantList(action.definition);
  const inputs = validateAgentInputs(action.definition);
  await checkGrants(deps, caller.account, grants);
  let agent: AgentRecord;
  try {
    agent = await deps.outbox.commit(async (trx, emit) => {
      await deps.accounts.ensure(caller.account, trx);
      await accountQuotas(deps).checkNewAgent(trx, caller.account);
      const created = await deps.agents.create(caller.account, name, { mcpServers: grants, ...inputs }, trx);
      // The event is committed with the agent: a registry that dies before publishing leaves it to the outbox's sweep.
      emit(agentChangedEvent(deps, created));
      // The audit entry too: an agent never exists without its entry, nor an entry without its agent.
      await recordAudit(trx, {
        ...auditBy(caller),
        action: 'CreateAgent',
        target: { kind: 'agent', name: created.name },
        before: null,
        after: auditAgent(created),
      });
      return created;
    });
  } catch (err) {
    if ((err as { code?: string }).code === '23505')
      throw new WireError(ErrorCodes.conflict, `name: an agent named ${name} exists`, { field: 'name' });
    throw err;
  }
  return { agent: agentView(agent) };
};

export const updateAgent: AgentsAction<'UpdateAgent'> = async (deps, caller, action) => {
  const current = await findAgent(deps, caller.account, action.agent);
  const grants = validateGrantList(action.definition);
  const inputs = validateAgentInputs(action.definition);
  await checkGrants(deps, caller.account, grants);
  const agent = await deps.outbox.commit(async (trx, emit) => {
    const updated = await deps.agents.update(caller.account, current.id, { mcpServers: grants, ...inputs }, trx);
    emit(agentChangedEvent(deps, updated));
    await recordAudit(trx, {
      ...auditBy(caller),
      action: 'UpdateAgent',
      target: { kind: 'agent', name: updated.name },
      before: auditAgent(current),
      after: auditAgent(updated),
    });
    return updated;
  });
  return { agent: agentView(agent) };
};

export const getAgent: AgentsAction<'GetAgent'> = async (deps, caller, action) => ({
  agent: agentView(await findAgent(deps, caller.account, action.agent)),
});

export const listAgents: AgentsAction<'ListAgents'> = async (deps, caller) => ({
  agents: (await deps.agents.list(caller.account)).map(agentView),
});
