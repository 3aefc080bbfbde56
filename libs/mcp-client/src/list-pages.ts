/** `tools/list` over every page of one connection core, as the connection lists (not the SDK's cached `listTools`). */
import type { ListToolsResult, RequestOptions, Tool } from '@modelcontextprotocol/client';
import { classifyMcpError, type ClassifyContext } from './classify.js';
import type { ToolsWithHints } from './listed-tools.js';
import type { ListToolsOptions } from './mcp-connection.js';
import type { ConnectionCore } from './connection-core.js';
import { withTaskSupport } from './tasks.js';

/** A listing's (and a relayed request's) timeout when the caller sets none. */
export const DEFAULT_LIST_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_PAGES = 50;

/**
 * Lists every page (up to `maxPages`; a cursor seen before ends the walk), the first listing of a
 * name winning; the first page's cache hints are kept. The result is not yet scrubbed of secrets.
 * Each page carries `trace` (a W3C carrier): in its `_meta` (modern), in its HTTP headers (legacy).
 */
export async function listToolPages(
  core: ConnectionCore,
  opts: ListToolsOptions,
  trace: Record<string, string> | undefined,
  classify: ClassifyContext,
): Promise<ToolsWithHints> {
  const maxPages = opts.maxPages ?? DEFAULT_MAX_PAGES;
  const options: RequestOptions = { timeout: opts.timeoutMs ?? DEFAULT_LIST_TIMEOUT_MS };
  if (opts.signal) options.signal = opts.signal;
  // The trace context: in a modern request's `_meta`, in a legacy one's HTTP headers.
  const meta = core.verdict.era === 'modern' ? trace : undefined;
  if (meta === undefined && trace !== undefined) options.headers = trace;
  const byName = new Map<string, Tool>();
  const seenCursors = new Set<string>();
  const out: ToolsWithHints = { tools: [] };
  let cursor: string | undefined;
  for (let page = 0; page < maxPages; page += 1) {
    let result: ListToolsResult;
    const params: Record<string, unknown> = cursor === undefined ? {} : { cursor };
    if (meta !== undefined) params._meta = meta;
    try {
      // Not client.listTools(): that caches, drops tools it finds invalid (we report them) and
      // feeds the output validators we never use.
      result = await core.client.request({ method: 'tools/list', params }, options);
    } catch (error) {
      throw classifyMcpError(error, opts.signal, classify);
    }
    if (page === 0) copyHints(result, out);
    // A modern server with the tasks extension: each tool may run as a task (./tasks.ts).
    const tools = withTaskSupport(result.tools, core.verdict.era, core.client.getServerCapabilities());
    for (const tool of tools) if (!byName.has(tool.name)) byName.set(tool.name, tool);
    const next = result.nextCursor;
    if (next === undefined || seenCursors.has(next)) break;
    seenCursors.add(next);
    cursor = next;
  }
  out.tools = [...byName.values()];
  return out;
}

/** The first page's 2026-07-28 cache hints, when they are well-formed. */
function copyHints(result: ListToolsResult, out: ToolsWithHints): void {
  const hints = result as { ttlMs?: unknown; cacheScope?: unknown };
  if (typeof hints.ttlMs === 'number' && Number.isFinite(hints.ttlMs) && hints.ttlMs >= 0) out.ttlMs = hints.ttlMs;
  if (hints.cacheScope === 'public' || hints.cacheScope === 'private') out.cacheScope = hints.cacheScope;
}
