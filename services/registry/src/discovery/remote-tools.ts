import { createHash } from 'node:crypto';
import { carriesProtoKey, encodeCanonical, inputSchemaFault, type RemoteTool } from '@mcpx/domain';
import { invalidMcpHeaderTools } from '@mcpx/mcp-client';

/** Bounds on a remote server's tool list (its data is untrusted). */
export const TOOL_LIMITS = { maxTools: 1000, maxToolNameLength: 512 } as const;

/** A tool list as we keep it: JSON values only, bounded, in the server's order. */
export function sanitizeTools(tools: unknown[]): RemoteTool[] {
  const out: RemoteTool[] = [];
  for (const t of tools.slice(0, TOOL_LIMITS.maxTools)) {
    if (t === null || typeof t !== 'object') continue;
    const tool = JSON.parse(JSON.stringify(t)) as Record<string, unknown>;
    if (typeof tool.name !== 'string' || tool.name === '' || tool.name.length > TOOL_LIMITS.maxToolNameLength) continue;
    const clean: RemoteTool = { name: tool.name };
    if (typeof tool.title === 'string') clean.title = tool.title;
    if (typeof tool.description === 'string') clean.description = tool.description;
    if (tool.inputSchema !== undefined) clean.inputSchema = tool.inputSchema;
    if (tool.outputSchema !== undefined) clean.outputSchema = tool.outputSchema;
    if (tool.annotations !== null && typeof tool.annotations === 'object') clean.annotations = tool.annotations;
    out.push(clean);
  }
  return out;
}

/**
 * The tools to keep of a listed set, and those refused with why, so nothing is silently lost
 * (the server's status names each):
 * - an invalid `x-mcp-header` annotation (MCP 2026-07-28): the tool cannot be called as the
 *   server expects;
 * - an input schema the validator will refuse to evaluate in part (a `$ref` cycle that consumes
 *   no input, a chain of more `$ref`s in a row than it follows): every call that reaches that
 *   part would fail with an error the agent cannot fix, so the owner sees why before any call,
 *   and agents are not handed the schema.
 */
export function screenTools(tools: RemoteTool[]): { kept: RemoteTool[]; skipped: Array<{ name: string; reason: string }> } {
  const skipped = invalidMcpHeaderTools(tools as Parameters<typeof invalidMcpHeaderTools>[0]).map((t) => ({ name: t.name, reason: t.reason }));
  const refused = new Set(skipped.map((t) => t.name));
  for (const tool of tools) {
    if (refused.has(tool.name)) continue;
    if (carriesProtoKey(tool)) {
      skipped.push({ name: tool.name, reason: 'it carries the key "__proto__", which the connector does not pass on (it would not survive as an own property)' });
      refused.add(tool.name);
      continue;
    }
    if (tool.inputSchema === undefined) continue;
    const fault = schemaFault(tool.inputSchema);
    if (fault === undefined) continue;
    skipped.push({ name: tool.name, reason: fault });
    refused.add(tool.name);
  }
  if (skipped.length === 0) return { kept: tools, skipped };
  return { kept: tools.filter((t) => !refused.has(t.name)), skipped };
}

/** {@link inputSchemaFault}, and a schema it cannot walk counted as a fault rather than a crash. */
function schemaFault(schema: unknown): string | undefined {
  try {
    return inputSchemaFault(schema);
  } catch {
    return 'the input schema could not be checked';
  }
}

/** The canonical hash of a tool list: equal lists hash equal whatever their key order. */
export function toolsHash(tools: RemoteTool[]): string {
  return createHash('sha256').update(encodeCanonical(tools)).digest('hex');
}

/** A day: longer list lifetimes are held to it (the server's hint is untrusted). */
const MAX_LIST_TTL_MS = 86_400_000;

/** The freshness hints of a listing, checked and bounded (a bad one is dropped, not trusted). */
export function listHints(listed: { ttlMs?: unknown; cacheScope?: unknown }): { ttlMs?: number; cacheScope?: 'public' | 'private' } {
  const ttl = listed.ttlMs;
  return {
    ...(typeof ttl === 'number' && Number.isFinite(ttl) && ttl >= 0 ? { ttlMs: Math.min(Math.round(ttl), MAX_LIST_TTL_MS) } : {}),
    ...(listed.cacheScope === 'public' || listed.cacheScope === 'private' ? { cacheScope: listed.cacheScope } : {}),
  };
}
