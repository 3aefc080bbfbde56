import type { Tool } from '@modelcontextprotocol/client';

/** A tool whose `x-mcp-header` annotations break 2026-07-28, and why. */
export interface InvalidMcpHeaderTool {
  name: string;
  reason: string;
}

const ANNOTATION = 'x-mcp-header';
/** RFC 9110 `token`: what a header name may be made of. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Primitive property types a header can carry (SEP-2243: string, integer and boolean; not number). */
const PRIMITIVES = new Set(['string', 'integer', 'boolean']);
/** Keywords whose subschemas are not statically reachable through `properties`: no annotation may sit there. */
const UNREACHABLE_KEYWORDS = [
  'items',
  'prefixItems',
  'contains',
  'additionalProperties',
  'unevaluatedProperties',
  'unevaluatedItems',
  'propertyNames',
  'patternProperties',
  'oneOf',
  'anyOf',
  'allOf',
  'not',
  'if',
  'then',
  'else',
  '$defs',
  'definitions',
  'dependentSchemas',
];
/**
 * The walk looks for annotations this deep at most (hostile input is bounded): deeper parts are
 * not walked, and the tool is kept (no tool is dropped for its schema's depth). An annotation
 * below it is not seen, so it gets no header.
 */
const MAX_DEPTH = 32;
/** Schema nodes visited per tool at most; the walk ends there, keeping what it found. */
const MAX_NODES = 10_000;

/**
 * The tools whose `x-mcp-header` annotations are invalid under 2026-07-28 ("Custom Headers from
 * Tool Parameters"), each with the first reason found: an annotation must sit on a property
 * reached through `properties` keys only, be a non-empty RFC 9110 token, be on a primitive-typed
 * property, and be case-insensitively unique within the tool. Such a tool cannot be called
 * correctly, so discovery refuses to project it and says why. Pure and bounded: the walk stops at
 * 32 levels and 10,000 subschemas, and what lies beyond is not judged (the tool is kept).
 */
export function invalidMcpHeaderTools(tools: readonly Tool[]): InvalidMcpHeaderTool[] {
  const out: InvalidMcpHeaderTool[] = [];
  for (const tool of tools) {
    const reason = mcpHeaderFault(tool.inputSchema);
    if (reason !== undefined) out.push({ name: tool.name, reason });
  }
  return out;
}

/** One `x-mcp-header` parameter: where it sits in `arguments`, and its header name. */
interface Declaration {
  path: readonly string[];
  headerName: string;
}

/** The first `x-mcp-header` fault of one input schema, or `undefined`; the declarations go to `found`. */
export function mcpHeaderFault(inputSchema: unknown, found?: Declaration[]): string | undefined {
  const seen = new Map<string, string>();
  let nodes = 0;
  const visit = (node: unknown, path: readonly string[], reachable: boolean): string | undefined => {
    if (node === null || typeof node !== 'object' || Array.isArray(node)) return undefined;
    nodes += 1;
    if (nodes > MAX_NODES || path.length > MAX_DEPTH) return undefined;
    const schema = node as Record<string, unknown>;
    if (Object.hasOwn(schema, ANNOTATION)) {
      const where = path.length === 0 ? 'the schema root' : path.join('.');
      if (!reachable || path.length === 0)
        return `${where}: x-mcp-header is allowed only on a property reached through "properties"`;
      const name = schema[ANNOTATION];
      if (typeof name !== 'string' || name === '') return `${where}: x-mcp-header must be a non-empty string`;
      if (!TOKEN.test(name))
        return `${where}: x-mcp-header ${JSON.stringify(name.slice(0, 64))} is not a valid header name token`;
      const type = schema.type;
      if (typeof type !== 'string' || !PRIMITIVES.has(type))
        return `${where}: x-mcp-header needs a string, integer or boolean property (got ${typeof type === 'string' ? type : 'no single type'})`;
      const lower = name.toLowerCase();
      const other = seen.get(lower);
      if (other !== undefined) return `x-mcp-header ${JSON.stringify(name)} is declared twice (also at ${other})`;
      seen.set(lower, where);
      found?.push({ path, headerName: name });
    }
    const properties = schema.properties;
    if (properties !== null && typeof properties === 'object' && !Array.isArray(properties)) {
      for (const [key, child] of Object.entries(properties as Record<string, unknown>)) {
        const fault = visit(child, [...path, key], reachable);
        if (fault !== undefined) return fault;
      }
    }
    for (const keyword of UNREACHABLE_KEYWORDS) {
      const sub = schema[keyword];
      if (sub === undefined || sub === null || typeof sub !== 'object') continue;
      const branches = Array.isArray(sub)
        ? sub
        : keyword === '$defs' ||
            keyword === 'definitions' ||
            keyword === 'patternProperties' ||
            keyword === 'dependentSchemas'
          ? Object.values(sub)
          : [sub];
      for (const branch of branches) {
        const fault = visit(branch, [...path, `<${keyword}>`], false);
        if (fault !== undefined) return fault;
      }
    }
    return undefined;
  };
  return visit(inputSchema, [], true);
}

/** Declarations of a tool's input schema, scanned once per schema object (`undefined`: the schema is invalid). */
const scans = new WeakMap<object, readonly Declaration[] | undefined>();

function declarationsOf(inputSchema: unknown): readonly Declaration[] | undefined {
  if (inputSchema === null || typeof inputSchema !== 'object') return [];
  if (scans.has(inputSchema)) return scans.get(inputSchema);
  const found: Declaration[] = [];
  const decls = mcpHeaderFault(inputSchema, found) === undefined ? found : undefined;
  scans.set(inputSchema, decls);
  return decls;
}

/**
 * The `Mcp-Param-<Name>` headers of one modern `tools/call` (2026-07-28 "Custom Headers from Tool
 * Parameters", as the SDK builds them): one per `x-mcp-header` declaration whose argument is a
 * primitive (absent or `null`: no header; a non-finite number or an unsafe integer: none), the
 * value encoded by {@link encodeMcpParamValue}. A tool whose annotations are invalid gets none
 * (discovery does not project such tools).
 */
export function mcpParamHeaders(
  inputSchema: unknown,
  args: Record<string, unknown> | undefined,
): Record<string, string> {
  const decls = declarationsOf(inputSchema);
  const out: Record<string, string> = {};
  if (decls === undefined || decls.length === 0) return out;
  for (const decl of decls) {
    let node: unknown = args;
    for (const key of decl.path)
      node = node !== null && typeof node === 'object' ? (node as Record<string, unknown>)[key] : undefined;
    const text = primitiveText(node);
    if (text !== undefined) out[`Mcp-Param-${decl.headerName}`] = encodeMcpParamValue(text);
  }
  return out;
}

function primitiveText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number' && Number.isFinite(value) && (!Number.isInteger(value) || Number.isSafeInteger(value)))
    return String(value);
  return undefined;
}

const B64_PREFIX = '=?base64?';
const B64_SUFFIX = '?=';

/**
 * A header value as 2026-07-28 encodes it: a plain, printable ASCII value without surrounding
 * whitespace goes as is; anything else (non-ASCII, control characters, empty, padded, or a value
 * that looks like the sentinel) as `=?base64?<base64 of its UTF-8>?=`.
 */
export function encodeMcpParamValue(value: string): string {
  return needsBase64(value) ? `${B64_PREFIX}${Buffer.from(value, 'utf8').toString('base64')}${B64_SUFFIX}` : value;
}

function needsBase64(s: string): boolean {
  if (s.length === 0) return true;
  if (s.startsWith(B64_PREFIX) && s.endsWith(B64_SUFFIX)) return true;
  if (s !== s.trim()) return true;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c !== 9 && (c < 32 || c > 126)) return true;
  }
  return false;
}
