import { FieldRules, type AgentDefinition, type Rule } from '@mcpx/contracts';
import type { Kysely } from 'kysely';
import type { Database } from '@mcpx/db';
import type { EndpointReads, ProxyReads } from '../read-model.js';
import { cborShape, jsonShape } from './stored-shape.js';

const { str, anyStr, optional, list, oneOf, shape, mapOf } = FieldRules;

const storedDefinition = shape({
  mcpServers: optional(list(anyStr)),
  inputs: optional(shape({ forms: optional(oneOf('person', 'runtime')) })),
});

/**
 * An agent's definition as every reader sees it: its grant (none when absent) and `inputs` only
 * when the runtime answers forms (`person`, the default, reads as absent).
 */
const definition: Rule<AgentDefinition> = (v, field) => {
  const d = storedDefinition(v, field);
  return {
    mcpServers: d.mcpServers ?? [],
    ...(d.inputs?.forms === 'runtime' ? { inputs: { forms: 'runtime' as const } } : {}),
  };
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

/** What the endpoint lists of an agent: {@link AgentRows} and the projection's version (0 before the first projection). */
export interface AgentToolSetRows extends AgentRows {
  version: number;
}

/** The tables an agent's rows are read from: both the proxy's and the endpoint's read models hold them. */
type AgentReads = Pick<Kysely<Pick<Database, 'registry.agents' | 'projector.agent_tools'>>, 'selectFrom'>;

async function agentRows(db: AgentReads, account: string, agent: string): Promise<AgentToolSetRows | null> {
  const [def, tools] = await Promise.all([
    db
      .selectFrom('registry.agents')
      .select('definition_cbor')
      .where('account_id', '=', account)
      .where('id', '=', agent)
      .executeTakeFirst(),
    db
      .selectFrom('projector.agent_tools')
      .select(['tools', 'version'])
      .where('account_id', '=', account)
      .where('agent_id', '=', agent)
      .executeTakeFirst(),
  ]);
  if (def === undefined) return null;
  return {
    definition: AgentDefinitionColumn.decode(def.definition_cbor),
    tools: tools === undefined ? {} : AgentToolsColumn.check(tools.tools),
    version: tools?.version ?? 0,
  };
}

/** The agent's definition and projected tools; null when the account has no such agent. */
export async function readAgent(db: ProxyReads, account: string, agent: string): Promise<AgentRows | null> {
  const rows = await agentRows(db, account, agent);
  return rows === null ? null : { definition: rows.definition, tools: rows.tools };
}

/** The agent's definition, projected tools and the projection's version, for the endpoint; null when the account has no such agent. */
export function readAgentToolSet(db: EndpointReads, account: string, agent: string): Promise<AgentToolSetRows | null> {
  return agentRows(db, account, agent);
}
