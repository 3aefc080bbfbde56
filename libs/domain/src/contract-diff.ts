import { documentCid, encodeCanonical } from './cid.js';
import { buildToolDocuments } from './document.js';
import {
  isPlainObject,
  ToolNameStyle,
  type JsonObject,
  type JsonValue,
  type McpToolDocument,
  type RemoteTool,
  type ToolAnnotations,
} from './types.js';

/**
 * What a remote tool promises an agent, as its document carries it: the fields a model reads and
 * a call is checked against. Name, server and permission are not part of it (a rename is another
 * tool; the permission is the owner's).
 */
export interface ToolContract {
  title?: string;
  description: string;
  inputSchema: JsonObject;
  outputSchema?: JsonObject;
  annotations?: ToolAnnotations;
}

/** The contract of a remote tool, normalised and bounded exactly as its document would be. */
export function toolContract(tool: RemoteTool): ToolContract {
  const [doc] = buildToolDocuments('x', [tool], { style: ToolNameStyle.double_underscore });
  if (doc === undefined) return { description: '', inputSchema: { type: 'object' } };
  return {
    ...(doc.title !== undefined ? { title: doc.title } : {}),
    description: doc.description,
    inputSchema: doc.inputSchema,
    ...(doc.outputSchema !== undefined ? { outputSchema: doc.outputSchema } : {}),
    ...(doc.annotations !== undefined ? { annotations: doc.annotations } : {}),
  };
}

/**
 * The contract's CID (CIDv1, dag-cbor, sha2-256 of its canonical encoding): equal contracts have
 * equal CIDs whatever their key order, and any change a model or a call could notice (title,
 * description, input or output schema, annotations) is a new one.
 */
export function contractCid(tool: RemoteTool): string {
  return documentCid(toolContract(tool));
}

/**
 * The contract CID of a tool document: the contract it carries (title, description, schemas,
 * annotations), as {@link contractCid} computes it for the remote tool the document was built
 * from. A pinned server's projected documents carry the accepted contracts, so this is the CID a
 * person accepted.
 */
export function documentContractCid(doc: McpToolDocument): string {
  const contract: ToolContract = {
    ...(doc.title !== undefined ? { title: doc.title } : {}),
    description: doc.description,
    inputSchema: doc.inputSchema,
    ...(doc.outputSchema !== undefined ? { outputSchema: doc.outputSchema } : {}),
    ...(doc.annotations !== undefined ? { annotations: doc.annotations } : {}),
  };
  return documentCid(contract);
}

/** One piece of a text diff: kept, added or removed words (with their spacing). */
export interface TextChange {
  op: 'same' | 'added' | 'removed';
  text: string;
}

/** Tokens a text diff compares at most (each side); longer texts are shown removed whole and added whole. */
const TEXT_DIFF_MAX_TOKENS = 2_000;

/** A word diff (longest common subsequence of words and the spacing between them). */
export function diffText(before: string, after: string): TextChange[] {
  if (before === after) return before === '' ? [] : [{ op: 'same', text: before }];
  const a = before.match(/\s+|[^\s]+/g) ?? [];
  const b = after.match(/\s+|[^\s]+/g) ?? [];
  if (a.length > TEXT_DIFF_MAX_TOKENS || b.length > TEXT_DIFF_MAX_TOKENS) {
    return [
      ...(before !== '' ? [{ op: 'removed' as const, text: before }] : []),
      ...(after !== '' ? [{ op: 'added' as const, text: after }] : []),
    ];
  }
  // lcs[i][j]: the longest common subsequence of a[i..] and b[j..].
  const lcs: Uint16Array[] = Array.from({ length: a.length + 1 }, () => new Uint16Array(b.length + 1));
  for (let i = a.length - 1; i >= 0; i--) {
    const row = lcs[i]!;
    const next = lcs[i + 1]!;
    for (let j = b.length - 1; j >= 0; j--) row[j] = a[i] === b[j] ? next[j + 1]! + 1 : Math.max(next[j]!, row[j + 1]!);
  }
  const out: TextChange[] = [];
  const push = (op: TextChange['op'], text: string): void => {
    const last = out.at(-1);
    if (last?.op === op) last.text += text;
    else out.push({ op, text });
  };
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      push('same', a[i]!);
      i++;
      j++;
    } else if (lcs[i + 1]![j]! >= lcs[i]![j + 1]!) push('removed', a[i++]!);
    else push('added', b[j++]!);
  }
  while (i < a.length) push('removed', a[i++]!);
  while (j < b.length) push('added', b[j++]!);
  return out;
}

/** What a schema change touches. */
export type SchemaAspect = 'property' | 'type' | 'enum' | 'default' | 'required' | 'keyword';

/** One structural change of a schema: `path` names the property (`/to`, `/items/[]`, '' for the root). */
export interface SchemaChange {
  path: string;
  aspect: SchemaAspect;
  /** The keyword for `keyword` changes (`description`, `maximum`, `pattern`, …). */
  keyword?: string;
  kind: 'added' | 'removed' | 'changed';
  before?: JsonValue;
  after?: JsonValue;
}

/** Schema changes reported at most per schema (a hostile schema cannot make a review unbounded). */
const SCHEMA_CHANGES_MAX = 200;
/** Nesting a schema diff walks into. */
const SCHEMA_DIFF_MAX_DEPTH = 16;

function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined) return false;
  try {
    const x = encodeCanonical(a);
    const y = encodeCanonical(b);
    return x.length === y.length && x.every((v, i) => v === y[i]);
  } catch {
    return JSON.stringify(a) === JSON.stringify(b);
  }
}

function asObject(v: unknown): Record<string, unknown> {
  return isPlainObject(v) ? v : {};
}

/**
 * The structural difference of two JSON Schemas: properties added and removed, and per property
 * its type, enum, default, required and every other keyword, recursing into properties and items.
 */
export function diffSchemas(before: unknown, after: unknown): SchemaChange[] {
  const out: SchemaChange[] = [];
  walkSchema(asObject(before), asObject(after), '', 0, out);
  return out.slice(0, SCHEMA_CHANGES_MAX);
}

function walkSchema(
  a: Record<string, unknown>,
  b: Record<string, unknown>,
  path: string,
  depth: number,
  out: SchemaChange[],
): void {
  if (out.length >= SCHEMA_CHANGES_MAX) return;
  const add = (c: SchemaChange): void => {
    if (out.length < SCHEMA_CHANGES_MAX) out.push(c);
  };
  const aspectOf = (key: string): SchemaAspect =>
    key === 'type' ? 'type' : key === 'enum' || key === 'const' ? 'enum' : key === 'default' ? 'default' : 'keyword';
  const ra = new Set(Array.isArray(a.required) ? a.required.filter((x): x is string => typeof x === 'string') : []);
  const rb = new Set(Array.isArray(b.required) ? b.required.filter((x): x is string => typeof x === 'string') : []);
  for (const name of rb) if (!ra.has(name)) add({ path: `${path}/${name}`, aspect: 'required', kind: 'added' });
  for (const name of ra) if (!rb.has(name)) add({ path: `${path}/${name}`, aspect: 'required', kind: 'removed' });
  const pa = asObject(a.properties);
  const pb = asObject(b.properties);
  for (const name of Object.keys(pb)) {
    if (!Object.hasOwn(pa, name))
      add({ path: `${path}/${name}`, aspect: 'property', kind: 'added', after: pb[name] as JsonValue });
  }
  for (const name of Object.keys(pa)) {
    if (!Object.hasOwn(pb, name))
      add({ path: `${path}/${name}`, aspect: 'property', kind: 'removed', before: pa[name] as JsonValue });
    else if (depth < SCHEMA_DIFF_MAX_DEPTH)
      walkSchema(asObject(pa[name]), asObject(pb[name]), `${path}/${name}`, depth + 1, out);
    else if (!same(pa[name], pb[name]))
      add({
        path: `${path}/${name}`,
        aspect: 'keyword',
        kind: 'changed',
        before: pa[name] as JsonValue,
        after: pb[name] as JsonValue,
      });
  }
  if (isPlainObject(a.items) && isPlainObject(b.items) && depth < SCHEMA_DIFF_MAX_DEPTH)
    walkSchema(a.items, b.items, `${path}/[]`, depth + 1, out);
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const key of keys) {
    if (key === 'properties' || key === 'required') continue;
    if (key === 'items' && isPlainObject(a.items) && isPlainObject(b.items)) continue;
    const x = a[key];
    const y = b[key];
    if (same(x, y)) continue;
    const aspect = aspectOf(key);
    const kw = aspect === 'keyword' || key === 'const' ? { keyword: key } : {};
    if (x === undefined) add({ path, aspect, ...kw, kind: 'added', after: y as JsonValue });
    else if (y === undefined) add({ path, aspect, ...kw, kind: 'removed', before: x as JsonValue });
    else add({ path, aspect, ...kw, kind: 'changed', before: x as JsonValue, after: y as JsonValue });
  }
}

/** A change of one annotation hint (or of the annotations' title). */
export interface AnnotationChange {
  key: string;
  before?: JsonValue;
  after?: JsonValue;
}

/** The difference of two contracts, as a reviewer reads it. `before` absent: a new tool. */
export interface ContractDiff {
  title?: { before?: string; after?: string };
  /** The description as a word diff; empty when it did not change. */
  description: TextChange[];
  descriptionChanged: boolean;
  inputSchema: SchemaChange[];
  outputSchema: SchemaChange[];
  annotations: AnnotationChange[];
}

export function diffContracts(before: ToolContract | undefined, after: ToolContract): ContractDiff {
  const b = before ?? { description: '', inputSchema: {} };
  const annotations: AnnotationChange[] = [];
  const ka = asObject(b.annotations);
  const kb = asObject(after.annotations);
  for (const key of [...new Set([...Object.keys(ka), ...Object.keys(kb)])].sort()) {
    if (same(ka[key], kb[key])) continue;
    annotations.push({
      key,
      ...(ka[key] !== undefined ? { before: ka[key] as JsonValue } : {}),
      ...(kb[key] !== undefined ? { after: kb[key] as JsonValue } : {}),
    });
  }
  const descriptionChanged = b.description !== after.description;
  return {
    ...(b.title !== after.title
      ? {
          title: {
            ...(b.title !== undefined ? { before: b.title } : {}),
            ...(after.title !== undefined ? { after: after.title } : {}),
          },
        }
      : {}),
    description: descriptionChanged ? diffText(b.description, after.description) : [],
    descriptionChanged,
    inputSchema: diffSchemas(b.inputSchema, after.inputSchema),
    outputSchema: same(b.outputSchema, after.outputSchema)
      ? []
      : diffSchemas(b.outputSchema ?? {}, after.outputSchema ?? {}),
    annotations,
  };
}

/** Keywords that describe and do not constrain: a change of them alone keeps a schema compatible. */
const DESCRIPTIVE = new Set([
  'description',
  'title',
  'examples',
  '$comment',
  'default',
  'deprecated',
  'readOnly',
  'writeOnly',
  'x-mcp-header',
]);
/** Keywords {@link inputCompatible} reasons about; any other that differs makes it incompatible. */
const UNDERSTOOD = new Set([
  'type',
  'enum',
  'const',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'minLength',
  'maxLength',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
  'pattern',
  'format',
  'multipleOf',
  'uniqueItems',
]);

function typesOf(schema: Record<string, unknown>): Set<string> | undefined {
  const t = schema.type;
  if (typeof t === 'string') return new Set([t]);
  if (Array.isArray(t)) return new Set(t.filter((x): x is string => typeof x === 'string'));
  return undefined;
}

/**
 * Whether arguments that the accepted input schema admits are still admitted by the new one, so an
 * agent holding the accepted document cannot send a call the server would now refuse. A
 * conservative structural check, not a proof: the new schema may drop constraints, add optional
 * properties, widen types, enums and bounds; it may not require more, narrow, or change a keyword
 * it does not reason about (`anyOf`, `$ref`, …). `reasons` says what made it incompatible.
 */
export function inputCompatible(accepted: unknown, next: unknown): { compatible: boolean; reasons: string[] } {
  const reasons: string[] = [];
  widens(asObject(accepted), asObject(next), '', 0, reasons);
  return { compatible: reasons.length === 0, reasons: reasons.slice(0, 20) };
}

function widens(
  a: Record<string, unknown>,
  b: Record<string, unknown>,
  path: string,
  depth: number,
  reasons: string[],
): void {
  const at = path === '' ? 'the input' : path;
  if (depth > SCHEMA_DIFF_MAX_DEPTH) {
    if (!same(a, b)) reasons.push(`${at}: nested too deep to compare`);
    return;
  }
  for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
    if (DESCRIPTIVE.has(key) || UNDERSTOOD.has(key)) continue;
    if (!same(a[key], b[key])) reasons.push(`${at}: ${key} changed`);
  }
  const ta = typesOf(a);
  const tb = typesOf(b);
  if (tb !== undefined) {
    const covered = (t: string): boolean => tb.has(t) || (t === 'integer' && tb.has('number'));
    if (ta === undefined || ![...ta].every(covered)) reasons.push(`${at}: type narrowed to ${[...tb].join('|')}`);
  }
  if (Array.isArray(b.enum)) {
    const allowed = b.enum;
    const was = Array.isArray(a.enum) ? a.enum : a.const !== undefined ? [a.const] : undefined;
    if (was === undefined || !was.every((v) => allowed.some((w) => same(v, w)))) reasons.push(`${at}: enum narrowed`);
  }
  if (
    b.const !== undefined &&
    !same(a.const, b.const) &&
    !(Array.isArray(a.enum) && a.enum.length === 1 && same(a.enum[0], b.const))
  )
    reasons.push(`${at}: const changed`);
  const ra = new Set(Array.isArray(a.required) ? a.required : []);
  for (const r of Array.isArray(b.required) ? b.required : [])
    if (!ra.has(r)) reasons.push(`${at}: ${String(r)} is now required`);
  const lower = (k: string): void => {
    const x = a[k];
    const y = b[k];
    if (typeof y !== 'number') return;
    if (typeof x !== 'number' || y > x) reasons.push(`${at}: ${k} raised`);
  };
  const upper = (k: string): void => {
    const x = a[k];
    const y = b[k];
    if (typeof y !== 'number') return;
    if (typeof x !== 'number' || y < x) reasons.push(`${at}: ${k} lowered`);
  };
  for (const k of ['minimum', 'exclusiveMinimum', 'minLength', 'minItems', 'minProperties']) lower(k);
  for (const k of ['maximum', 'exclusiveMaximum', 'maxLength', 'maxItems', 'maxProperties']) upper(k);
  for (const k of ['pattern', 'format', 'multipleOf'])
    if (b[k] !== undefined && !same(a[k], b[k])) reasons.push(`${at}: ${k} changed`);
  if (b.uniqueItems === true && a.uniqueItems !== true) reasons.push(`${at}: items must now be unique`);
  const pa = asObject(a.properties);
  const pb = asObject(b.properties);
  const closed = b.additionalProperties === false;
  if (closed && a.additionalProperties !== false) reasons.push(`${at}: additional properties are no longer allowed`);
  for (const name of Object.keys(pa)) {
    const child = path === '' ? name : `${path}.${name}`;
    if (Object.hasOwn(pb, name)) widens(asObject(pa[name]), asObject(pb[name]), child, depth + 1, reasons);
    else if (closed) reasons.push(`${child}: removed`);
    else if (isPlainObject(b.additionalProperties))
      widens(asObject(pa[name]), b.additionalProperties, child, depth + 1, reasons);
  }
  if (
    isPlainObject(b.additionalProperties) &&
    a.additionalProperties !== undefined &&
    !same(a.additionalProperties, b.additionalProperties)
  ) {
    if (isPlainObject(a.additionalProperties))
      widens(a.additionalProperties, b.additionalProperties, `${at}.*`, depth + 1, reasons);
    else reasons.push(`${at}: additional properties are now constrained`);
  }
  if (isPlainObject(b.items)) {
    if (isPlainObject(a.items)) widens(a.items, b.items, `${path}[]`, depth + 1, reasons);
    else reasons.push(`${at}: items are now constrained`);
  }
}
