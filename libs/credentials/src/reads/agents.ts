import { FieldRules, type AgentDefinition, type Rule } from '@mcpx/contracts';
import type { ProxyReads } from '../read-model.js';
import { cborShape, jsonShape } from './stored-shape.js';

const { str, anyStr, optional, list, oneOf, shape, mapOf } = FieldRules;

const storedDefinition = shape({ mcpServers: optional(list(anyStr)), inputs: optional(shape({ forms: optional(oneOf('person', 'runtime')) })) });

/**
 * An agent's definition as every reader sees it: its grant (none when absent) and `inputs` only
 * when the runtime answers forms (`person`, the default, reads as absent).
 */
const definition: Rule<AgentDefinition> = (v, field) => {
  const d = storedDefinition(v, field);
  return { mcpServers: d.mcpServers ?? [], ...(d.inputs?.forms === 'runtime' ? { inputs: { forms: 'runtime' as const } } : {}) };
};

/** `registry.agents.definition_cbor`, written by the registry's agents repository. */
export const AgentDefinitionColumn = cborShape('registry.agents.definition_cbor', definition);

/** `projector.projected_servers.tools` (and so the `projector.agent_tools` view's `tools`): projected name → document CID. */
export const ToolMapColumn = jsonShape('projector.projected_servers.tools', mapOf(str));
/** The `projector.agent_tools` view's `tools`, the union of its granted servers' maps (checked by the same rule). */
const AgentToolsColumn = jsonShape('projector.agent_tools.tools', mapOf(str));

/** What a call needs of an agent: the grant (the authority) and the projection (name → CID, a cache of it). */
export interface AgentRows {
  definition: AgentDefinition;
  tools: Record<string, string>;
}

/** The agent's definition and projected tools; null when the account has no such agent. */
export async function readAgent(db: ProxyReads, account: string, agent: string): Promise<AgentRows | null> {
  const [def, tools] = await Promise.all([
    db.selectFrom('registry.agents').select('definition_cbor').where('account_id', '=', account).where('id', '=', agent).executeTakeFirst(),
    db.selectFrom('projector.agent_tools').select('tools').where('account_id', '=', account).where('agent_id', '=', agent).executeTakeFirst(),
  ]);
  if (def === undefined) return null;
  return { definition: AgentDefinitionColumn.decode(def.definition_cbor), tools: tools === undefined ? {} : AgentToolsColumn.check(tools.tools) };
}
