import { OMITTED_META_KEY, serverMeta } from './content.js';
import { jsonSizeWithin } from './json-measure.js';
import { carriesProtoKey } from './proto-key.js';
import { isPlainObject, type JsonObject } from './types.js';

/**
 * JSON bytes of a tool's `_meta` that a document keeps (docs/endpoint.md#mcp-apps). An MCP Apps
 * tool's `ui` ({resourceUri, visibility, csp, …}) is a few hundred bytes; the bound keeps a
 * server from growing every document, index and listing with data of its own.
 */
export const TOOL_META_MAX_BYTES = 16 * 1024;
/** Nesting of a tool's `_meta` kept (its values are a server's, untrusted). */
export const TOOL_META_MAX_DEPTH = 16;

/**
 * The `_meta` keys MCP Apps reads a tool's app from, as the document keeps them: `ui.resourceUri`
 * (the extension's current shape) and the flat `ui/resourceUri` of its first drafts.
 */
export const UI_META_KEY = 'ui';
export const LEGACY_UI_RESOURCE_URI_KEY = 'ui/resourceUri';

/**
 * A listed tool's `_meta` as its document keeps it: a plain JSON object without the connector's own
 * keys (`io.mcpx/…`, which a server cannot set), key by key in the server's order with `ui` first,
 * while the whole stays within {@link TOOL_META_MAX_BYTES} of JSON. A key that is not kept (past the
 * bound, nested past {@link TOOL_META_MAX_DEPTH}, or carrying `__proto__`) is named, not dropped
 * silently: `_meta["io.mcpx/omitted"]` is `{keys: [...], limit}`. Undefined when nothing is left.
 *
 * Discovery applies it to what a server lists; `kept: true` applies it again to a `_meta` that
 * discovery already kept (a remote tool of an event, when its document is built): the marker
 * discovery wrote is the connector's own and stays, its names counted with any new ones.
 */
export function toolMetaOf(value: unknown, opts: { kept?: boolean } = {}): JsonObject | undefined {
  const earlier = opts.kept === true && isPlainObject(value) ? omittedKeys(value[OMITTED_META_KEY]) : [];
  const meta = serverMeta(value);
  if (meta === undefined && earlier.length === 0) return undefined;
  if (meta === undefined) return { [OMITTED_META_KEY]: { keys: earlier, limit: TOOL_META_MAX_BYTES } };
  const keys = Object.keys(meta);
  const ordered = keys.includes(UI_META_KEY) ? [UI_META_KEY, ...keys.filter((k) => k !== UI_META_KEY)] : keys;
  const kept: Array<[string, unknown]> = [];
  const omitted: string[] = [...earlier];
  // Room for the marker itself (a few names and the limit).
  let budget = TOOL_META_MAX_BYTES - 1_024;
  for (const key of ordered) {
    const v = meta[key];
    const size = jsonSizeWithin({ [key]: v }, budget);
    if (size === undefined || key === '__proto__' || carriesProtoKey(v) || notKeepable(v, TOOL_META_MAX_DEPTH)) {
      if (omitted.length < 16) omitted.push(key.slice(0, 128));
      continue;
    }
    kept.push([key, v]);
    budget -= size;
  }
  if (omitted.length > 0) kept.push([OMITTED_META_KEY, { keys: omitted, limit: TOOL_META_MAX_BYTES }]);
  // fromEntries defines each key (an assignment of "__proto__" would set a prototype instead).
  return kept.length === 0 ? undefined : (Object.fromEntries(kept) as JsonObject);
}

/** The key names a marker of an earlier pass holds (at most 16 strings). */
function omittedKeys(marker: unknown): string[] {
  if (!isPlainObject(marker) || !Array.isArray(marker.keys)) return [];
  return (marker.keys as unknown[])
    .filter((k): k is string => typeof k === 'string')
    .slice(0, 16)
    .map((k) => k.slice(0, 128));
}

/**
 * The app resource URI a tool's `_meta` names (MCP Apps): `ui.resourceUri`, else the flat
 * `ui/resourceUri`; undefined when it names none.
 */
export function toolAppUri(meta: JsonObject | undefined): string | undefined {
  if (meta === undefined) return undefined;
  const ui = meta[UI_META_KEY];
  if (isPlainObject(ui) && typeof ui.resourceUri === 'string') return ui.resourceUri;
  const flat = meta[LEGACY_UI_RESOURCE_URI_KEY];
  return typeof flat === 'string' ? flat : undefined;
}

/**
 * A tool's `_meta` with its app resource URI(s) mapped by `rename` (the merged face's URI of the
 * server's resource), the rest as it is; the same object when it names no app.
 */
export function withAppUri(meta: JsonObject, rename: (uri: string) => string): JsonObject {
  const ui = meta[UI_META_KEY];
  const flat = meta[LEGACY_UI_RESOURCE_URI_KEY];
  const uiUri = isPlainObject(ui) && typeof ui.resourceUri === 'string' ? ui.resourceUri : undefined;
  if (uiUri === undefined && typeof flat !== 'string') return meta;
  const out: JsonObject = { ...meta };
  if (uiUri !== undefined) out[UI_META_KEY] = { ...(ui as JsonObject), resourceUri: rename(uiUri) };
  if (typeof flat === 'string') out[LEGACY_UI_RESOURCE_URI_KEY] = rename(flat);
  return out;
}

/**
 * Whether a value is not JSON a document can keep: nested deeper than `max` levels, or holding
 * anything but strings, finite numbers, booleans, null, arrays and plain objects (iterative;
 * called on values already size-bounded).
 */
function notKeepable(value: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v === 'string' || typeof v === 'boolean') continue;
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) return true;
      continue;
    }
    if (depth >= max || (!Array.isArray(v) && !isPlainObject(v))) return true;
    for (const item of Array.isArray(v) ? (v as unknown[]) : Object.values(v)) stack.push([item, depth + 1]);
  }
  return false;
}
