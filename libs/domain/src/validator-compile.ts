// Compiles a JSON Schema (2020-12 keywords the validator models) into a graph of nodes.
import { jsonKey } from './json-measure.js';
import { TRIVIAL, TYPE_BITS, blankNode, type Node } from './validator-node.js';
import { RefResolver } from './validator-ref.js';
import { inPlaceCycles, markChecks } from './validator-graph.js';

/** Schema nodes compiled at most; a bigger schema's remaining parts are left unchecked (the server still validates). */
export const MAX_COMPILED_NODES = 100_000;
/** Pointer segments and anchor-scan steps spent resolving `$ref`s of one schema at most. */
const MAX_REF_WORK = 1_000_000;

interface Pending {
  schema: Record<string, unknown>;
  node: Node;
  /** Inside a subschema with its own `$id`: its `#` fragments name that resource, which is not modelled. */
  scoped: boolean;
}

/**
 * The root node of `schema`'s graph. Each schema object is compiled once (a `$ref` to it, or a
 * cycle back to it, reuses its node), iteratively, so neither depth nor sharing can blow the stack
 * or the work; the schema itself is only read, never changed.
 */
export function compileSchema(schema: unknown): Node {
  return compileSchemaCounted(schema).root;
}

/** {@link compileSchema}, also saying how many nodes were compiled (at most {@link MAX_COMPILED_NODES}). */
export function compileSchemaCounted(schema: unknown): { root: Node; nodes: number } {
  const graph = compileGraph(schema);
  return { root: graph.root, nodes: graph.nodes.length };
}

/** The compiled graph with what analysis needs: every node, and the node of a schema object. */
export interface CompiledGraph {
  root: Node;
  nodes: readonly Node[];
  nodeOf(schema: object): Node | undefined;
}

export function compileGraph(schema: unknown): CompiledGraph {
  const compiler = new Compiler(schema);
  const root = compiler.run();
  markChecks(compiler.nodes, inPlaceCycles(compiler.nodes));
  return { root: root.checks ? root : TRIVIAL, nodes: compiler.nodes, nodeOf: (o) => compiler.nodeOf(o) };
}

class Compiler {
  readonly nodes: Node[] = [];
  private readonly memo = new Map<object, Node>();
  private readonly refs = new Map<string, Node | undefined>();
  private readonly pending: Pending[] = [];
  private readonly budget = { nodes: MAX_COMPILED_NODES };
  private readonly resolver: RefResolver;

  constructor(private readonly root: unknown) {
    this.resolver = new RefResolver(root, { nodes: MAX_REF_WORK });
  }

  nodeOf(schema: object): Node | undefined {
    return this.memo.get(schema);
  }

  run(): Node {
    const root = this.nodeFor(this.root, false, true);
    for (let item = this.pending.pop(); item !== undefined; item = this.pending.pop()) this.fill(item);
    return root;
  }

  /** The node of a subschema, queued for filling when first seen. */
  private nodeFor(schema: unknown, scoped: boolean, isRoot = false): Node {
    if (schema === false) {
      if (--this.budget.nodes < 0) return TRIVIAL;
      const never = blankNode();
      never.never = true;
      this.nodes.push(never);
      return never;
    }
    if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return TRIVIAL;
    const known = this.memo.get(schema);
    if (known !== undefined) return known;
    if (--this.budget.nodes < 0) return TRIVIAL;
    const node = blankNode();
    this.memo.set(schema, node);
    this.nodes.push(node);
    const s = schema as Record<string, unknown>;
    this.pending.push({ schema: s, node, scoped: scoped || (!isRoot && typeof s.$id === 'string') });
    return node;
  }

  private fill({ schema: s, node, scoped }: Pending): void {
    const typeNames = (typeof s.type === 'string' ? [s.type] : Array.isArray(s.type) ? s.type : []).filter(
      (t): t is string => typeof t === 'string' && Object.hasOwn(TYPE_BITS, t),
    );
    for (const t of typeNames) node.types |= TYPE_BITS[t]!;
    node.typeText = typeNames.join(' or ');

    if (Object.hasOwn(s, 'const') && s.const !== undefined) compileEnum(node, [s.const], 'const', this.budget);
    else if (Array.isArray(s.enum)) compileEnum(node, s.enum, 'enum', this.budget);

    node.minLength = count(s.minLength);
    node.maxLength = count(s.maxLength);
    node.minItems = count(s.minItems);
    node.maxItems = count(s.maxItems);
    node.minimum = finite(s.minimum);
    node.maximum = finite(s.maximum);
    node.exclusiveMinimum = finite(s.exclusiveMinimum);
    node.exclusiveMaximum = finite(s.exclusiveMaximum);
    // Draft 4 spelled exclusive bounds as booleans beside minimum/maximum.
    if (s.exclusiveMinimum === true && node.minimum !== undefined)
      [node.exclusiveMinimum, node.minimum] = [node.minimum, undefined];
    if (s.exclusiveMaximum === true && node.maximum !== undefined)
      [node.exclusiveMaximum, node.maximum] = [node.maximum, undefined];

    if (Array.isArray(s.prefixItems) && s.prefixItems.length > 0)
      node.prefixItems = s.prefixItems.map((sub) => this.nodeFor(sub, scoped));
    // An array `items` is the tuple form of drafts before 2020-12: left to the server.
    if (isSchemaObject(s.items) || s.items === false) node.items = this.nodeFor(s.items, scoped);
    if (isSchemaObject(s.properties)) {
      const properties = new Map<string, Node>();
      for (const [key, sub] of Object.entries(s.properties)) properties.set(key, this.nodeFor(sub, scoped));
      node.properties = properties;
    }
    if (Array.isArray(s.required)) {
      const required = s.required.filter((k): k is string => typeof k === 'string');
      if (required.length > 0) node.required = [...new Set(required)];
      if (node.required !== undefined && isSchemaObject(s.properties))
        node.defaults = requiredDefaults(node.required, s.properties);
    }
    // additionalProperties is relative to properties *and* patternProperties; without modelling
    // patterns it cannot be judged, so it is skipped rather than refusing valid input.
    if (
      s.patternProperties === undefined &&
      (s.additionalProperties === false || isSchemaObject(s.additionalProperties))
    ) {
      node.additional = this.nodeFor(s.additionalProperties, scoped);
    }
    if (isSchemaObject(s.dependentRequired)) {
      const dependent: [string, string[]][] = [];
      for (const [key, names] of Object.entries(s.dependentRequired)) {
        if (!Array.isArray(names)) continue;
        const required = [...new Set(names.filter((k): k is string => typeof k === 'string'))];
        if (required.length > 0) dependent.push([key, required]);
      }
      if (dependent.length > 0) node.dependentRequired = dependent;
    }

    if (typeof s.$ref === 'string' && !scoped) {
      const target = this.ref(s.$ref);
      if (target !== undefined) [node.ref, node.refText] = [target, s.$ref];
    }
    const allOf = this.list(s.allOf, scoped);
    if (allOf !== undefined) node.allOf = allOf;
    const anyOf = this.list(s.anyOf, scoped);
    if (anyOf !== undefined) node.anyOf = anyOf;
    const oneOf = this.list(s.oneOf, scoped);
    if (oneOf !== undefined) node.oneOf = oneOf;
    if (isSchemaObject(s.not) || typeof s.not === 'boolean')
      node.not = s.not === true ? TRIVIAL : this.nodeFor(s.not, scoped);
  }

  /** A non-empty array of subschemas (an empty one is not a valid keyword: ignored). */
  private list(value: unknown, scoped: boolean): Node[] | undefined {
    if (!Array.isArray(value) || value.length === 0) return undefined;
    return value.map((sub) => this.nodeFor(sub, scoped));
  }

  private ref(ref: string): Node | undefined {
    if (this.refs.has(ref)) return this.refs.get(ref);
    const target = this.resolver.resolve(ref);
    const node =
      target === true || target === false || isSchemaObject(target) ? this.nodeFor(target, false) : undefined;
    this.refs.set(ref, node);
    return node;
  }
}

function compileEnum(node: Node, values: unknown[], keyword: 'enum' | 'const', budget: { nodes: number }): void {
  const primitives = new Set<unknown>();
  const keys = new Set<string>();
  for (const v of values) {
    if (
      v === null ||
      typeof v === 'string' ||
      typeof v === 'boolean' ||
      (typeof v === 'number' && Number.isFinite(v))
    ) {
      primitives.add(v);
    } else {
      // Compound entries are compared through their canonical key: one Set lookup per value.
      const key = jsonKey(v, { nodes: MAX_COMPILED_NODES });
      budget.nodes--;
      if (key !== undefined) keys.add(key);
    }
  }
  node.enumPrimitives = primitives;
  if (keys.size > 0) node.enumKeys = keys;
  node.enumKeyword = keyword;
  const shown = values.slice(0, 10).map((v) => jsonKey(v, { nodes: 100 }) ?? '?');
  node.enumText = shown.join(', ') + (values.length > 10 ? `, … (${values.length} values)` : '') || '(none)';
}

/** The `default` of each required property's own subschema (a `$ref`'s target is not consulted). */
function requiredDefaults(
  required: readonly string[],
  properties: Record<string, unknown>,
): Map<string, unknown> | undefined {
  let defaults: Map<string, unknown> | undefined;
  for (const key of required) {
    const sub = Object.hasOwn(properties, key) ? properties[key] : undefined;
    if (isSchemaObject(sub) && Object.hasOwn(sub, 'default') && sub.default !== undefined)
      (defaults ??= new Map()).set(key, sub.default);
  }
  return defaults;
}

function isSchemaObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function count(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined;
}

function finite(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}
