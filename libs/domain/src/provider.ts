import type { JsonObject, McpToolDocument } from './types.js';

export interface OpenAiTool {
  type: 'function';
  function: { name: string; description: string; parameters: JsonObject };
}

export interface AnthropicTool {
  name: string;
  description: string;
  input_schema: JsonObject;
}

type ProviderDoc = Pick<McpToolDocument, 'name' | 'description' | 'inputSchema' | 'server' | 'remoteName'> &
  Partial<Pick<McpToolDocument, 'title'>>;

/** A promoted document as an OpenAI (chat completions) function tool, full schema included. */
export function toOpenAiTool(doc: ProviderDoc): OpenAiTool {
  return {
    type: 'function',
    function: { name: doc.name, description: providerDescription(doc), parameters: doc.inputSchema },
  };
}

/** A promoted document as an Anthropic Messages tool, full schema included. */
export function toAnthropicTool(doc: ProviderDoc): AnthropicTool {
  return { name: doc.name, description: providerDescription(doc), input_schema: doc.inputSchema };
}

/**
 * The description a provider sees. A remote tool may publish none; the model then still learns
 * which server and remote tool it calls, rather than getting a bare name.
 */
export function providerDescription(doc: ProviderDoc): string {
  if (doc.description !== '') return doc.description;
  if (doc.title !== undefined && doc.title !== '') return doc.title;
  return `${doc.remoteName} on the ${doc.server} MCP server`;
}

export interface OwnToolDocument {
  name: string;
  kind: string;
  enabled: boolean;
}

/**
 * The requested names a turn may hand the provider as tools: those in the enabled callable set,
 * or among the agent's own enabled non-builtin documents (derived again from the definition at run
 * start). A name matching nothing, e.g. one the model made up, is dropped silently. First
 * occurrence order, no duplicates.
 */
export function promotableTools(
  enabledCallable: ReadonlySet<string>,
  ownDocs: readonly OwnToolDocument[],
  requested: readonly string[],
): string[] {
  const own = new Set(ownDocs.filter((d) => d.enabled && d.kind !== 'builtin').map((d) => d.name));
  const out = new Set<string>();
  for (const name of requested) {
    if (typeof name === 'string' && (enabledCallable.has(name) || own.has(name))) out.add(name);
  }
  return [...out];
}
