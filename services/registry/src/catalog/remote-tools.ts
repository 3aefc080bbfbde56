import { createHash } from 'node:crypto';
import { carriesProtoKey, encodeCanonical, schemaBoundsFault, toolMetaOf, type RemoteTool } from '@mcpx/domain';
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
    // Only `taskSupport`, and only a short string of it (docs/tasks.md): nothing else of `execution` is kept.
    const taskSupport = (tool.execution as { taskSupport?: unknown } | null | undefined)?.taskSupport;
    if (typeof taskSupport === 'string' && taskSupport.length <= 32) clean.execution = { taskSupport };
    // The tool's `_meta` (MCP Apps' `ui.resourceUri`), bounded and less the connector's own keys as a document keeps it.
    const meta = toolMetaOf(tool._meta);
    if (meta !== undefined) clean._meta = meta;
    out.push(clean);
  }
  return out;
}

/**
 * The tools to keep of a listed set, and those refused with why, so nothing is silently lost
 * (the server's status names each):
 * - an invalid `x-mcp-header` annotation (MCP 2026-07-28): the tool cannot be called as the
 *   server expects;
 * - the key `__proto__` anywhere: it would not survive as an own property;
 * - an input or output schema past the bounds a document keeps (256 KiB of JSON, 256 levels).
 * No tool is skipped for its schema's depth or shape within those bounds: the document keeps the
 * schema whole, and the validator checks what it models and lets the rest through.
 */
export function screenTools(tools: RemoteTool[]): {
  kept: RemoteTool[];
  skipped: Array<{ name: string; reason: string }>;
} {
  const skipped = invalidMcpHeaderTools(tools as Parameters<typeof invalidMcpHeaderTools>[0]).map((t) => ({
    name: t.name,
    reason: t.reason,
  }));
  const refused = new Set(skipped.map((t) => t.name));
  for (const tool of tools) {
    if (refused.has(tool.name)) continue;
    const reason = carriesProtoKey(tool)
      ? 'it carries the key "__proto__", which the connector does not pass on (it would not survive as an own property)'
      : boundsFault(tool);
    if (reason === undefined) continue;
    skipped.push({ name: tool.name, reason });
    refused.add(tool.name);
  }
  if (skipped.length === 0) return { kept: tools, skipped };
  return { kept: tools.filter((t) => !refused.has(t.name)), skipped };
}

/** Why a tool's schemas are past the document's bounds (see `schemaBoundsFault`), or undefined. */
function boundsFault(tool: RemoteTool): string | undefined {
  const input = schemaBoundsFault(tool.inputSchema);
  if (input !== undefined) return `its input schema is ${input}`;
  const output = schemaBoundsFault(tool.outputSchema);
  return output === undefined ? undefined : `its output schema is ${output}`;
}

/** The canonical hash of a tool list: equal lists hash equal whatever their key order. */
export function toolsHash(tools: RemoteTool[]): string {
  return createHash('sha256').update(encodeCanonical(tools)).digest('hex');
}

/** A day: longer list lifetimes are held to it (the server's hint is untrusted). */
const MAX_LIST_TTL_MS = 86_400_000;

/** The freshness hints of a listing, checked and bounded (a bad one is dropped, not trusted). */
export function listHints(listed: { ttlMs?: unknown; cacheScope?: unknown }): {
  ttlMs?: number;
  cacheScope?: 'public' | 'private';
} {
  const ttl = listed.ttlMs;
  return {
    ...(typeof ttl === 'number' && Number.isFinite(ttl) && ttl >= 0
      ? { ttlMs: Math.min(Math.round(ttl), MAX_LIST_TTL_MS) }
      : {}),
    ...(listed.cacheScope === 'public' || listed.cacheScope === 'private' ? { cacheScope: listed.cacheScope } : {}),
  };
}
