import { invalidInput, type AgentDefinition } from '@mcpx/contracts';

export const MAX_GRANTS = 16;
const AGENT_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

export function validateAgentName(name: unknown): string {
  if (typeof name !== 'string' || !AGENT_NAME_RE.test(name)) {
    throw invalidInput('name', 'must be 1-64 letters, digits, _ . or -, starting with a letter or digit');
  }
  return name;
}

/**
 * `definition.inputs` of an agent (decoded by the action map): who answers its servers' form
 * elicitations (a person by default). Returns the part of the definition to store (empty: default).
 */
export function validateAgentInputs(definition: AgentDefinition | undefined): { inputs?: { forms: 'runtime' } } {
  return definition?.inputs?.forms === 'runtime' ? { inputs: { forms: 'runtime' } } : {};
}

/** `definition.mcpServers` (decoded by the action map), de-duplicated: at most 16. Existence is checked by the caller. */
export function validateGrantList(definition: AgentDefinition | undefined): string[] {
  const out = [...new Set(definition?.mcpServers ?? [])];
  if (out.length > MAX_GRANTS)
    throw invalidInput('definition.mcpServers', `at most ${MAX_GRANTS} servers may be granted`);
  return out;
}
