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
const UNREACHABLE_KEYWORDS = ['items', 'prefixItems', 'additionalProperties', 'patternProperties', 'oneOf', 'anyOf', 'allOf', 'not', 'if', 'then', 'else', '$defs', 'definitions', 'dependentSchemas'];
/** Deeper schemas than this are refused rather than walked (hostile input is bounded). */
const MAX_DEPTH = 32;
/** Schema nodes visited per tool before the walk gives up (and refuses the tool). */
const MAX_NODES = 10_000;

/**
 * The tools whose `x-mcp-header` annotations are invalid under 2026-07-28 ("Custom Headers from
 * Tool Parameters"), each with the first reason found: an annotation must sit on a property
 * reached through `properties` keys only, be a non-empty RFC 9110 token, be on a primitive-typed
 * property, and be case-insensitively unique within the tool. Such a tool cannot be called
 * correctly, so discovery refuses to project it and says why. Pure and bounded (depth, nodes).
 */
export function invalidMcpHeaderTools(tools: readonly Tool[]): InvalidMcpHeaderTool[] {
  const out: InvalidMcpHeaderTool[] = [];
  for (const tool of tools) {
    const reason = mcpHeaderFault(tool.inputSchema);
    if (reason !== undefined) out.push({ name: tool.name, reason });
  }
  return out;
}

/** The first `x-mcp-header` fault of one input schema, or `undefined`. */
export function mcpHeaderFault(inputSchema: unknown): string | undefined {
  const seen = new Map<string, string>();
  let nodes = 0;
  const visit = (node: unknown, path: readonly string[], reachable: boolean): string | undefined => {
    if (node === null || typeof node !== 'object' || Array.isArray(node)) return undefined;
    nodes += 1;
    if (nodes > MAX_NODES) return `the input schema has more than ${MAX_NODES} subschemas`;
    if (path.length > MAX_DEPTH) return `the input schema is nested deeper than ${MAX_DEPTH}`;
    const schema = node as Record<string, unknown>;
    if (Object.hasOwn(schema, ANNOTATION)) {
      const where = path.length === 0 ? 'the schema root' : path.join('.');
      if (!reachable || path.length === 0) return `${where}: x-mcp-header is allowed only on a property reached through "properties"`;
      const name = schema[ANNOTATION];
      if (typeof name !== 'string' || name === '') return `${where}: x-mcp-header must be a non-empty string`;
      if (!TOKEN.test(name)) return `${where}: x-mcp-header ${JSON.stringify(name.slice(0, 64))} is not a valid header name token`;
      const type = schema.type;
      if (typeof type !== 'string' || !PRIMITIVES.has(type)) return `${where}: x-mcp-header needs a string, integer or boolean property (got ${typeof type === 'string' ? type : 'no single type'})`;
      const lower = name.toLowerCase();
      const other = seen.get(lower);
      if (other !== undefined) return `x-mcp-header ${JSON.stringify(name)} is declared twice (also at ${other})`;
      seen.set(lower, where);
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
      const branches = Array.isArray(sub) ? sub : keyword === '$defs' || keyword === 'definitions' || keyword === 'patternProperties' || keyword === 'dependentSchemas' ? Object.values(sub) : [sub];
      for (const branch of branches) {
        const fault = visit(branch, [...path, `<${keyword}>`], false);
        if (fault !== undefined) return fault;
      }
    }
    return undefined;
  };
  return visit(inputSchema, [], true);
}
