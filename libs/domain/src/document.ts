import { TaskSupport, isPermission, isPlainObject } from './types.js';
import type { McpToolDocument, Permission, RemoteTool, ToolAnnotations, ToolNameStyle } from './types.js';
import { projectToolNames } from './names.js';
import { normalizeInputSchema, normalizeOutputSchema } from './schema.js';
import { inheritPermission } from './permission.js';
import { boundText } from './utf8.js';
import { toolMetaOf } from './tool-meta.js';

/** A document's description is cut to this many UTF-8 bytes (an ellipsis included). */
export const DESCRIPTION_MAX_BYTES = 8 * 1024;
/** A document's title is cut to this many UTF-8 bytes (an ellipsis included). */
export const TITLE_MAX_BYTES = 512;

export interface BuildToolDocumentsOptions {
  style: ToolNameStyle;
  /** A curated built-in server: tools without hints get the name heuristic instead of `act`. */
  builtin?: boolean;
  /** The owner's per-tool permission, keyed by remote name; it wins over the inherited one. */
  overrides?: Readonly<Record<string, Permission>>;
}

/**
 * The tool documents of one server's remote tools, in the order the server listed them.
 * Remote input is untrusted: entries without a string name are skipped, a repeated name keeps its
 * first entry, and schemas, text and annotations are normalised and bounded. No field is ever
 * `undefined`, so every document encodes with dag-cbor.
 */
export function buildToolDocuments(
  server: string,
  tools: readonly RemoteTool[],
  opts: BuildToolDocumentsOptions,
): McpToolDocument[] {
  const byName = new Map<string, RemoteTool>();
  for (const tool of tools) {
    if (!isPlainObject(tool) || typeof tool.name !== 'string') continue;
    if (!byName.has(tool.name)) byName.set(tool.name, tool);
  }
  const names = projectToolNames(server, [...byName.keys()], opts.style);
  const docs: McpToolDocument[] = [];
  for (const [remoteName, tool] of byName) {
    const name = names.get(remoteName);
    if (name === undefined) continue;
    const annotations = normalizeAnnotations(tool.annotations);
    const override =
      opts.overrides && Object.hasOwn(opts.overrides, remoteName) ? opts.overrides[remoteName] : undefined;
    const permission = isPermission(override)
      ? override
      : inheritPermission(annotations, { builtin: opts.builtin === true, toolName: remoteName });
    const doc: McpToolDocument = {
      kind: 'mcp',
      name,
      description: boundText(
        typeof tool.description === 'string' ? tool.description.trim() : '',
        DESCRIPTION_MAX_BYTES,
      ),
      inputSchema: normalizeInputSchema(tool.inputSchema),
      permission,
      server,
      remoteName,
    };
    const rawTitle = typeof tool.title === 'string' ? tool.title : annotations?.title;
    const title = rawTitle === undefined ? '' : boundText(rawTitle.trim(), TITLE_MAX_BYTES);
    if (title !== '') doc.title = title;
    const outputSchema = normalizeOutputSchema(tool.outputSchema);
    if (outputSchema !== undefined) doc.outputSchema = outputSchema;
    if (annotations !== undefined) doc.annotations = annotations;
    const taskSupport = taskSupportOf(tool.execution);
    if (taskSupport !== undefined) doc.taskSupport = taskSupport;
    // What discovery kept of the tool's `_meta` (its marker of what it left out is the connector's).
    const meta = toolMetaOf(tool._meta, { kept: true });
    if (meta !== undefined) doc._meta = meta;
    docs.push(doc);
  }
  return docs;
}

/** A listed tool's `execution.taskSupport` as a document keeps it: `required` or `optional`, else none (`forbidden`, absent, anything else). */
export function taskSupportOf(execution: unknown): TaskSupport | undefined {
  if (!isPlainObject(execution)) return undefined;
  const v = execution.taskSupport;
  return v === TaskSupport.required || v === TaskSupport.optional ? v : undefined;
}

/**
 * Only the annotation fields MCP defines, with the right types; undefined when none is left.
 * Unknown fields are dropped so a server cannot grow documents with arbitrary data.
 */
export function normalizeAnnotations(value: unknown): ToolAnnotations | undefined {
  if (!isPlainObject(value)) return undefined;
  const out: ToolAnnotations = {};
  if (typeof value.title === 'string' && value.title.trim() !== '')
    out.title = boundText(value.title.trim(), TITLE_MAX_BYTES);
  for (const key of ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'] as const) {
    const hint = value[key];
    if (typeof hint === 'boolean') out[key] = hint;
  }
  return Object.keys(out).length === 0 ? undefined : out;
}
