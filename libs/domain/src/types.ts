/** A JSON value as it travels in tool documents: no `undefined`, no non-finite numbers. */
export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;
export interface JsonObject {
  [key: string]: JsonValue;
}

/** MCP tool annotations, as a server publishes them about its own tools (untrusted hints). */
export interface ToolAnnotations {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/** One entry of a remote server's `tools/list`, before projection. */
export interface RemoteTool {
  name: string;
  title?: string;
  description?: string;
  inputSchema?: unknown;
  outputSchema?: unknown;
  annotations?: ToolAnnotations;
  /**
   * How the tool runs: `taskSupport` of the 2025-11-25 revision's experimental tasks (`required`,
   * `optional`, `forbidden`), or `optional` recorded by discovery for every tool of a 2026-07-28
   * server that advertises the tasks extension (`io.modelcontextprotocol/tasks`), where the server
   * decides per call (docs/tasks.md).
   */
  execution?: { taskSupport?: string };
  /**
   * The tool's `_meta` as the server listed it (e.g. MCP Apps' `ui.resourceUri`); the document
   * keeps it bounded, without the connector's own keys (`toolMetaOf`).
   */
  _meta?: Record<string, unknown>;
}

/**
 * Whether a call of a tool is task-augmented (docs/tasks.md): `required` always, `optional` when
 * the caller asks (or the call would outlive the call bound). Absent on a document: never.
 */
export const TaskSupport = {
  required: 'required',
  optional: 'optional',
} as const;
export type TaskSupport = (typeof TaskSupport)[keyof typeof TaskSupport];

/**
 * How much a human must be involved in a call: `act` runs without stopping, `always_ask` stops
 * for a human every time. Keys equal values so `Permission.always_ask` reads like the wire form.
 */
export const Permission = {
  act: 'act',
  always_ask: 'always_ask',
} as const;
export type Permission = (typeof Permission)[keyof typeof Permission];

/**
 * How projected tool names are spelled:
 * - `double_underscore` (the default; docs/names.md): `<server>__<tool>`, server `^[a-z0-9][a-z0-9_-]{0,31}$`.
 * - `prefixed` (docs/names.md): `mcp_<slug>_<tool>`, slug `^[a-z][a-z0-9_]{1,30}$`; the `mcp_` prefix is
 *   reserved, so a connected server can never take the name of a platform tool.
 */
export const ToolNameStyle = {
  double_underscore: 'double_underscore',
  prefixed: 'prefixed',
} as const;
export type ToolNameStyle = (typeof ToolNameStyle)[keyof typeof ToolNameStyle];

/**
 * The tool document of one remote tool. Absent optional fields are omitted, never `undefined`,
 * because the document is hashed through dag-cbor, which cannot encode `undefined`.
 */
export interface McpToolDocument {
  kind: 'mcp';
  name: string;
  title?: string;
  description: string;
  inputSchema: JsonObject;
  outputSchema?: JsonObject;
  annotations?: ToolAnnotations;
  permission: Permission;
  server: string;
  remoteName: string;
  /** The tool's task support (`required` or `optional`); absent: its calls are never task-augmented. */
  taskSupport?: TaskSupport;
  /**
   * The tool's `_meta` as its server listed it, less the connector's own keys and bounded
   * (`toolMetaOf`): MCP Apps' `ui.resourceUri` among others. Not part of the contract (pins).
   */
  _meta?: JsonObject;
}

export function isPermission(value: unknown): value is Permission {
  return value === Permission.act || value === Permission.always_ask;
}

export function isToolNameStyle(value: unknown): value is ToolNameStyle {
  return value === ToolNameStyle.double_underscore || value === ToolNameStyle.prefixed;
}

/** True for `{}`-like objects (what JSON.parse and CBOR maps produce), false for arrays, Maps, Dates, bytes. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
