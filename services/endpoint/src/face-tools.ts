import { withAppUri, type McpToolDocument } from '@mcpx/domain';
import type { Tool } from '@modelcontextprotocol/server';
import { wrapUri } from './faced-names.js';
import { TASK_CAPABILITIES } from './task-wire.js';

/** What every face's MCP server says of itself and of its tools: its name, capabilities, list hints, tools as listed. */
export const SERVER_NAME = 'mcpx-agent';
/** How long a client may keep a `tools/list` page (`ttlMs`): list_changed says sooner when it changes. */
export const LIST_TTL_MS = 60_000;

// Subscriptions and list changes: what the granted servers say reaches the face's clients
// (subscriptions.ts); a server that cannot is named where it cannot (a listen's ack, an error).
// `logging`: the granted servers' log messages of a call reach the client that asked (docs/endpoint.md#logging).
export const SERVER_OPTIONS = {
  capabilities: {
    tools: { listChanged: true },
    prompts: { listChanged: true },
    resources: { subscribe: true, listChanged: true },
    completions: {},
    logging: {},
  },
};
export const TASK_SERVER_OPTIONS = { capabilities: { ...SERVER_OPTIONS.capabilities, ...TASK_CAPABILITIES } };
export const LIST_HINTS = { ttlMs: LIST_TTL_MS, cacheScope: 'private' as const };

/**
 * The tool's own `_meta` as a face lists it (docs/endpoint.md#mcp-apps): as the server listed it
 * on the per-server face; on the merged face an MCP Apps tool's `ui.resourceUri` is the merged
 * face's URI of that resource (`wrapUri`), so a host reads the app through the same face.
 */
function ownMeta(doc: McpToolDocument, perServer: boolean): Record<string, unknown> | undefined {
  const meta = doc._meta;
  if (meta === undefined || perServer) return meta;
  return withAppUri(meta, (uri) => wrapUri(doc.server, uri));
}

/**
 * A document as an MCP tool: its contract whole, the tool's own `_meta` (see {@link ownMeta}) and
 * its permission level and server under the connector's keys; named as the merged face names it
 * (`<server>__<tool>`) or, on a per-server face, by its server's own name.
 */
export function toTool(doc: McpToolDocument, perServer = false): Tool {
  return {
    name: perServer ? doc.remoteName : doc.name,
    ...(doc.title !== undefined ? { title: doc.title } : {}),
    description: doc.description,
    inputSchema: doc.inputSchema as Tool['inputSchema'],
    ...(doc.outputSchema !== undefined ? { outputSchema: doc.outputSchema } : {}),
    ...(doc.annotations !== undefined ? { annotations: doc.annotations } : {}),
    // 2025-11-25 clients read a task tool's support here (the SDK drops it toward 2026-07-28 ones).
    ...(doc.taskSupport !== undefined ? { execution: { taskSupport: doc.taskSupport } } : {}),
    _meta: { ...ownMeta(doc, perServer), 'io.mcpx/permission': doc.permission, 'io.mcpx/server': doc.server },
  };
}
