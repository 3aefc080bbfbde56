import { invalidInput } from '@mcpx/contracts';
import { isPlainObject, onlyKeys } from '../shared/field-checks.js';

export const MAX_GRANTS = 16;
const AGENT_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

export function validateAgentName(name: unknown): string {
  if (typeof name !== 'string' || !AGENT_NAME_RE.test(name)) {
    throw invalidInput('name', 'must be 1-64 letters, digits, _ . or -, starting with a letter or digit');
  }
  return name;
}

/**
 * `definition.inputs` of an agent: `{forms: 'person' | 'runtime'}` — who answers its servers' form
 * elicitations (a person by default). Returns the part of the definition to store (empty: default).
 */
export function validateAgentInputs(definition: unknown): { inputs?: { forms: 'runtime' } } {
  if (!isPlainObject(definition) || definition.inputs === undefined || definition.inputs === null) return {};
  const inputs = definition.inputs;
  if (!isPlainObject(inputs)) throw invalidInput('definition.inputs', 'must be {forms: "person" | "runtime"}');
  onlyKeys(inputs, ['forms'], 'definition.inputs');
  if (inputs.forms !== undefined && inputs.forms !== 'person' && inputs.forms !== 'runtime')
    throw invalidInput('definition.inputs.forms', 'must be person or runtime');
  return inputs.forms === 'runtime' ? { inputs: { forms: 'runtime' } } : {};
}

/** Validates `definition.mcpServers`: de-duplicated, at most 16. Existence is checked by the caller. */
export function validateGrantList(definition: unknown): string[] {
  if (definition === undefined) return [];
  if (!isPlainObject(definition)) throw invalidInput('definition', 'must be an object');
  onlyKeys(definition, ['mcpServers', 'inputs'], 'definition');
  const list = definition.mcpServers;
  if (list === undefined) return [];
  if (!Array.isArray(list)) throw invalidInput('definition.mcpServers', 'must be an array of server names');
  const out: string[] = [];
  for (const [i, item] of list.entries()) {
    if (typeof item !== 'string' || item === '' || item.length > 64)
      throw invalidInput(`definition.mcpServers[${i}]`, 'must be a server name');
    if (!out.includes(item)) out.push(item);
  }
  if (out.length > MAX_GRANTS)
    throw invalidInput('definition.mcpServers', `at most ${MAX_GRANTS} servers may be granted`);
  return out;
}
