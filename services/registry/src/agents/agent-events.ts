import type { AgentChangedEvent, Subjects } from '@mcpx/contracts';
import type { OutboxEvent } from '../events/outbox.js';
import type { AgentRecord } from './agents.repository.js';

/** `mcp.events.agent.changed.<acct>.<agent>` of an agent's revision (one id per revision). */
export function agentChanged(subjects: Subjects, agent: AgentRecord): OutboxEvent {
  const payload: AgentChangedEvent = {
    account: agent.accountId,
    agent: agent.id,
    revision: agent.revision,
    mcpServers: agent.definition.mcpServers,
  };
  return {
    subject: subjects.agentChanged(agent.accountId, agent.id),
    payload,
    msgId: `agent-${agent.id}-${agent.revision}`,
  };
}
