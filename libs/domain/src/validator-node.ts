// The compiled form of a schema, shared by the compiler and the evaluator.

// Type bits. An integer value carries both INTEGER and NUMBER, so `type: 'number'` admits it.
export const NULL = 1,
  BOOLEAN = 2,
  INTEGER = 4,
  NUMBER = 8,
  STRING = 16,
  ARRAY = 32,
  OBJECT = 64;
export const TYPE_BITS: Readonly<Record<string, number>> = {
  null: NULL,
  boolean: BOOLEAN,
  integer: INTEGER,
  number: NUMBER,
  string: STRING,
  array: ARRAY,
  object: OBJECT,
};

/**
 * A schema compiled to plain fields, so a call pays for keyword checks, not for schema lookups.
 * Subschemas are other nodes; a `$ref` is an edge to its target's node, so a recursive schema is
 * a graph with cycles, never an expanded tree.
 */
export interface Node {
  /** Something below is checked; false means the node admits every value and is skipped. */
  checks: boolean;
  /** The `false` schema: nothing matches. */
  never: boolean;
  /** Has `$ref`, `allOf`, `anyOf`, `oneOf` or `not` (after pruning): it can lead back to itself. */
  inPlace: boolean;
  types: number;
  typeText: string;
  enumPrimitives?: Set<unknown>;
  enumKeys?: Set<string>;
  enumText: string;
  enumKeyword: 'enum' | 'const';
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minItems?: number;
  maxItems?: number;
  /** `prefixItems`: the schema of each leading position. */
  prefixItems?: Node[];
  /** `items`: the schema of every position after `prefixItems`. */
  items?: Node;
  properties?: Map<string, Node>;
  required?: string[];
  /** `additionalProperties`: a schema, `false` compiled as a never node, or absent. */
  additional?: Node;
  /** `dependentRequired`: when the key is present, these keys are required too. */
  dependentRequired?: [string, string[]][];
  /** `$ref` resolved inside the schema; its text is kept for messages. */
  ref?: Node;
  refText?: string;
  /** Required properties whose subschema in `properties` has a `default`: filled when missing. */
  defaults?: Map<string, unknown>;
  allOf?: Node[];
  anyOf?: Node[];
  oneOf?: Node[];
  not?: Node;
}

/** Admits everything: an absent, `true`, `{}` or unusable schema. Shared, never mutated. */
// Not frozen: a frozen object has another shape, and every visit reads this one.
export const TRIVIAL: Readonly<Node> = blankNode();

/** A node with every field present, so all nodes share one shape (monomorphic property access on the hot path). */
export function blankNode(): Node {
  return {
    checks: false,
    never: false,
    inPlace: false,
    types: 0,
    typeText: '',
    enumPrimitives: undefined,
    enumKeys: undefined,
    enumText: '',
    enumKeyword: 'enum',
    minLength: undefined,
    maxLength: undefined,
    minimum: undefined,
    maximum: undefined,
    exclusiveMinimum: undefined,
    exclusiveMaximum: undefined,
    minItems: undefined,
    maxItems: undefined,
    prefixItems: undefined,
    items: undefined,
    properties: undefined,
    required: undefined,
    additional: undefined,
    dependentRequired: undefined,
    ref: undefined,
    refText: undefined,
    defaults: undefined,
    allOf: undefined,
    anyOf: undefined,
    oneOf: undefined,
    not: undefined,
  };
}

/** The nodes evaluated at the same value as `node` (no input consumed on the way). */
export function inPlaceChildren(node: Node): Node[] {
  const out: Node[] = [];
  if (node.ref !== undefined) out.push(node.ref);
  if (node.allOf !== undefined) for (const n of node.allOf) out.push(n);
  if (node.anyOf !== undefined) for (const n of node.anyOf) out.push(n);
  if (node.oneOf !== undefined) for (const n of node.oneOf) out.push(n);
  if (node.not !== undefined) out.push(node.not);
  return out;
}

/** The nodes evaluated at a member or item of the value. */
export function valueChildren(node: Node): Node[] {
  const out: Node[] = [];
  if (node.prefixItems !== undefined) for (const n of node.prefixItems) out.push(n);
  if (node.items !== undefined) out.push(node.items);
  if (node.properties !== undefined) for (const n of node.properties.values()) out.push(n);
  if (node.additional !== undefined) out.push(node.additional);
  return out;
}

/** The type bits of a value (0: not a JSON value). */
export function typeBits(value: unknown): number {
  switch (typeof value) {
    case 'string':
      return STRING;
    case 'number':
      if (!Number.isFinite(value)) return 0;
      return Number.isInteger(value) ? INTEGER | NUMBER : NUMBER;
    case 'bigint':
      return INTEGER | NUMBER;
    case 'boolean':
      return BOOLEAN;
    case 'object': {
      if (value === null) return NULL;
      if (Array.isArray(value)) return ARRAY;
      const proto: unknown = Object.getPrototypeOf(value);
      return proto === Object.prototype || proto === null ? OBJECT : 0;
    }
    case 'undefined':
    case 'function':
    case 'symbol':
      return 0;
  }
}

/** The JSON type of a value, for messages. */
export function describeType(value: unknown, bits: number): string {
  if (bits & STRING) return 'string';
  if (bits & INTEGER) return 'integer';
  if (bits & NUMBER) return 'number';
  if (bits & BOOLEAN) return 'boolean';
  if (bits & NULL) return 'null';
  if (bits & ARRAY) return 'array';
  if (bits & OBJECT) return 'object';
  return value === undefined ? 'nothing' : 'a value that is not JSON';
}
