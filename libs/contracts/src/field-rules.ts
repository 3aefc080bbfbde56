import { decodeStrict } from './codec.js';
import type { JsonObject } from '@mcpx/domain';
import { invalidInput } from './errors.js';

/**
 * The field rules every payload decoder is written in: a decoder is a table of its fields, each
 * with the rule its value must meet, instead of a page of checks ending in a cast. A rule checks
 * one value and returns it typed, or throws an `invalid_input` WireError naming the field by its
 * path (`account`, `status.state`, `tools[2].name`). A map rule builds a new object from the
 * fields its table names, so what a decoder returns holds nothing it did not check.
 */
export interface Rule<T> {
  (value: unknown, field: string): T;
  /** What the rule takes as a JSON Schema (2020-12, OpenAPI 3.1's dialect), for a document generated from a table. */
  readonly schema?: JsonSchema;
  /** Set on a rule that takes an absent value (`optional`, `absentOrNull`, `refused`): not a required field. */
  readonly absent?: true;
}

/** A JSON Schema (2020-12, the dialect of OpenAPI 3.1), as plain data. */
export type JsonSchema = { readonly [key: string]: unknown };

/** `check` as a rule described by `schema` (a new function: a rule given is never changed). */
export function described<T>(check: (value: unknown, field: string) => T, schema: JsonSchema): Rule<T> {
  const rule = (v: unknown, field: string): T => check(v, field);
  return Object.assign(rule, { schema });
}

/** `rule` with `more` added to its schema (a description, a bound its check holds). */
export function describe<T>(rule: Rule<T>, more: JsonSchema): Rule<T> {
  const out = described(rule, { ...rule.schema, ...more });
  return rule.absent ? Object.assign(out, { absent: true as const }) : out;
}

/** `rule` taking an absent value too. */
function mayBeAbsent<T>(
  check: (value: unknown, field: string) => T,
  schema: JsonSchema | undefined,
): Rule<T> & { readonly absent: true } {
  return Object.assign((v: unknown, field: string) => check(v, field), { schema, absent: true as const });
}

/** A map's table: field name → rule. */
export type Table = Record<string, Rule<unknown>>;

type Checked<R> = R extends Rule<infer T> ? T : never;
/** Whether a rule may give `undefined` (an `optional` one); a rule of `unknown` gives a field typed `unknown`. */
type MayBeAbsent<T> = unknown extends T ? false : undefined extends T ? true : false;
/** A field is optional when its rule takes an absent value: marked so (read without strict null checks too), or typed so. */
type Optional<R> = R extends { readonly absent: true } ? true : MayBeAbsent<Checked<R>>;
type RequiredKeys<S extends Table> = { [K in keyof S]: Optional<S[K]> extends true ? never : K }[keyof S];
type OptionalKeys<S extends Table> = { [K in keyof S]: Optional<S[K]> extends true ? K : never }[keyof S];

/** The value a table checks: its required fields, and its optional ones when present. */
export type Shaped<S extends Table> = { [K in RequiredKeys<S>]: Checked<S[K]> } & {
  [K in OptionalKeys<S>]?: Exclude<Checked<S[K]>, undefined>;
};

/** A map of the wire: a plain object, not a list or bytes. */
export function isMap(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && !ArrayBuffer.isView(v);
}

/** The path of a field inside `parent` (a top-level field is named bare). */
function pathOf(parent: string, key: string): string {
  return parent === '' ? key : `${parent}.${key}`;
}

/** A non-empty string. */
export const str: Rule<string> = described(
  (v, field) => {
    if (typeof v !== 'string' || v === '') throw invalidInput(field, 'must be a non-empty string');
    return v;
  },
  { type: 'string', minLength: 1 },
);

/** A non-empty string of at most `max` characters (a name, an id, a cursor from outside). */
export function text(max: number): Rule<string> {
  return described(
    (v, field) => {
      if (typeof v !== 'string' || v === '') throw invalidInput(field, 'must be a non-empty string');
      if (v.length > max) throw invalidInput(field, `must be at most ${max} characters`);
      return v;
    },
    { type: 'string', minLength: 1, maxLength: max },
  );
}

/** Any string, the empty one too. */
export const anyStr: Rule<string> = described(
  (v, field) => {
    if (typeof v !== 'string') throw invalidInput(field, 'must be a string');
    return v;
  },
  { type: 'string' },
);

/** A safe integer. */
export const int: Rule<number> = described(
  (v, field) => {
    if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw invalidInput(field, 'must be an integer');
    return v;
  },
  { type: 'integer' },
);

/** A finite number (a score, a freshness hint in milliseconds). */
export const num: Rule<number> = described(
  (v, field) => {
    if (typeof v !== 'number' || !Number.isFinite(v)) throw invalidInput(field, 'must be a number');
    return v;
  },
  { type: 'number' },
);

export const bool: Rule<boolean> = described(
  (v, field) => {
    if (typeof v !== 'boolean') throw invalidInput(field, 'must be a boolean');
    return v;
  },
  { type: 'boolean' },
);

/** A map whose values are not looked into (a JSON schema, a remote tool's annotations): kept as sent. */
export const anyMap: Rule<Record<string, unknown>> = described(
  (v, field) => {
    if (!isMap(v)) throw invalidInput(field, 'must be a map');
    return v;
  },
  { type: 'object' },
);

/** Any value at all, absent included: a field the receiver checks itself (an era verdict). */
export const anything: Rule<unknown> = described((v) => v, {});

/**
 * A map of type `T` that this side writes itself (a view the registry answers with): the rule
 * checks only that it is a map; `schema` describes it. For a response table, never for input.
 */
export function written<T>(schema: JsonSchema = { type: 'object' }): Rule<T> {
  return described((v, field) => {
    if (!isMap(v)) throw invalidInput(field, 'must be a map');
    return v as T; // written by this side, typed by its writer
  }, schema);
}

/** Exactly `value` (a flag an answer always carries). */
export function constant<const V extends string | number | boolean>(value: V): Rule<V> {
  return described(
    (v, field) => {
      if (v !== value) throw invalidInput(field, `must be ${String(value)}`);
      return value;
    },
    { const: value },
  );
}

/** The rule, or `null` (a field whose `null` means something: an inherited level, no expiry). */
export function orNull<T>(rule: Rule<T>): Rule<T | null> {
  const s = rule.schema ?? {};
  const schema = Array.isArray(s.enum)
    ? { ...s, enum: [...(s.enum as unknown[]), null] }
    : typeof s.type === 'string'
      ? { ...s, type: [s.type, 'null'] }
      : { oneOf: [s, { type: 'null' }] };
  return described((v, field) => (v === null ? null : rule(v, field)), schema);
}

/** One of the listed strings. */
export function oneOf<const V extends string>(...values: V[]): Rule<V> {
  const allowed: ReadonlySet<string> = new Set(values);
  const says = values.length === 2 ? `${values[0]} or ${values[1]}` : `one of ${values.join(', ')}`;
  return described(
    (v, field) => {
      if (typeof v !== 'string' || !allowed.has(v)) throw invalidInput(field, `must be ${says}`);
      return v as V; // checked against the set just above
    },
    { enum: values },
  );
}

/** A string matching `re` (a name's or an id's grammar); `says` completes "must be …". */
export function matching(re: RegExp, says: string): Rule<string> {
  return described(
    (v, field) => {
      if (typeof v !== 'string' || !re.test(v)) throw invalidInput(field, `must be ${says}`);
      return v;
    },
    { type: 'string', pattern: re.source },
  );
}

/** A safe integer of at least 0 (a count). */
export const count: Rule<number> = described(
  (v, field) => {
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0)
      throw invalidInput(field, 'must be an integer of at least 0');
    return v;
  },
  { type: 'integer', minimum: 0 },
);

/** A safe integer from `min` to `max` (a page size, a timeout). */
export function between(min: number, max: number): Rule<number> {
  return described(
    (v, field) => {
      if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min || v > max)
        throw invalidInput(field, `must be an integer from ${min} to ${max}`);
      return v;
    },
    { type: 'integer', minimum: min, maximum: max },
  );
}

/** The rule, or absent (`undefined`). */
export function optional<T>(rule: Rule<T>): Rule<T | undefined> & { readonly absent: true } {
  return mayBeAbsent((v, field) => (v === undefined ? undefined : rule(v, field)), rule.schema);
}

/** The rule, or absent: `null` and `undefined` alike (a field a caller may send as null). */
export function absentOrNull<T>(rule: Rule<T>): Rule<T | undefined> & { readonly absent: true } {
  return mayBeAbsent((v, field) => (v === undefined || v === null ? undefined : rule(v, field)), rule.schema);
}

/** A field that must be absent; `says` is why it is never taken ("must be …" does not fit it). */
export function refused(says: string): Rule<undefined> & { readonly absent: true } {
  return mayBeAbsent((v, field) => {
    if (v !== undefined) throw invalidInput(field, says);
    return undefined;
  }, undefined);
}

/** A list whose every item meets `item` (named `field[i]`), of at most `max` items when given. */
export function list<T>(item: Rule<T>, max?: number): Rule<T[]> {
  const schema = { type: 'array', items: item.schema ?? {}, ...(max === undefined ? {} : { maxItems: max }) };
  return described((v, field) => {
    if (!Array.isArray(v)) throw invalidInput(field, 'must be a list');
    if (max !== undefined && v.length > max) throw invalidInput(field, `must hold at most ${max} items`);
    return v.map((x: unknown, i) => item(x, `${field}[${i}]`));
  }, schema);
}

/** A map from any key to values that meet `value` (named `field.<key>`). */
export function mapOf<T>(value: Rule<T>): Rule<Record<string, T>> {
  return described(
    (v, field) => {
      if (!isMap(v)) throw invalidInput(field, 'must be a map');
      const out: Record<string, T> = {};
      for (const [k, x] of Object.entries(v)) out[k] = value(x, pathOf(field, k.slice(0, 64)));
      return out;
    },
    { type: 'object', additionalProperties: value.schema ?? {} },
  );
}

/**
 * A map holding the fields of `table`: each is checked by its rule and copied; an optional field
 * that is absent stays absent; a field the table does not name is left out.
 */
export function shape<S extends Table>(table: S): Rule<Shaped<S>> {
  const keys = Object.keys(table);
  return described((v, field) => {
    if (!isMap(v)) throw invalidInput(field === '' ? 'payload' : field, 'must be a map');
    const out: Record<string, unknown> = {};
    for (const k of keys) {
      const checked = table[k]!(v[k], pathOf(field, k));
      if (checked !== undefined) out[k] = checked;
    }
    // Every key of the table went through its rule just above: the one cast of the decoders.
    return out as Shaped<S>;
  }, tableSchema(table));
}

/**
 * A map holding the fields of `table` and no other: `shape`, and a field the table does not name
 * (but for `also`'s) is refused, named by its path (its key cut to 64 characters).
 */
export function closed<S extends Table>(table: S, also: readonly string[] = []): Rule<Shaped<S>> {
  const fields = shape(table);
  return described(
    (v, field) => {
      if (isMap(v))
        for (const k of Object.keys(v))
          if (!Object.hasOwn(table, k) && !also.includes(k))
            throw invalidInput(pathOf(field, k.slice(0, 64)), 'is not a known field');
      return fields(v, field);
    },
    { ...tableSchema(table), additionalProperties: false },
  );
}

/** The JSON Schema of a map holding `table`'s fields: its properties, and the fields it requires. */
export function tableSchema(table: Table): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  for (const [k, rule] of Object.entries(table)) {
    if (rule.schema === undefined && rule.absent === true) continue; // a refused field is no property
    properties[k] = rule.schema ?? {};
    if (rule.absent !== true && rule !== anything) required.push(k);
  }
  return required.length > 0 ? { type: 'object', properties, required } : { type: 'object', properties };
}

/**
 * A map whose fields named in `table` are checked, kept whole as sent: a document whose CID is
 * computed over all of it (a field this reader does not know must reach the next one unchanged),
 * or a value on a hot path (no copy is made of the map; a field's own rule may still build its
 * value, which is dropped).
 */
export function checkedMap<S extends Table>(table: S): Rule<Shaped<S>> {
  const keys = Object.keys(table);
  return described((v, field) => {
    if (!isMap(v)) throw invalidInput(field === '' ? 'payload' : field, 'must be a map');
    for (const k of keys) table[k]!(v[k], pathOf(field, k));
    // Every field of the table was checked just above; the others are kept as sent, unread.
    return v as Shaped<S>;
  }, tableSchema(table));
}

/**
 * A decoder of a whole payload: strict decoding (errors name `payload`), then `table` over the
 * map (errors name the field).
 */
export function payloadDecoder<S extends Table>(payload: string, table: S): (bytes: Uint8Array) => Shaped<S> {
  const fields = shape(table);
  return (bytes) => {
    const v = decodeStrict(bytes, payload);
    if (!isMap(v)) throw invalidInput(payload, 'must be a map');
    return fields(v, '');
  };
}

/** Whether `v` is a JSON value: no bytes, no `undefined`, no non-finite numbers, at any depth. */
function isJson(v: unknown): boolean {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return true;
  if (typeof v === 'number') return Number.isFinite(v);
  if (Array.isArray(v)) return v.every(isJson);
  return isMap(v) && Object.values(v).every(isJson);
}

/** A JSON object (a tool document's schema): checked to its leaves, kept as sent. */
export const jsonObject: Rule<JsonObject> = described(
  (v, field) => {
    if (!isMap(v) || !isJson(v)) throw invalidInput(field, 'must be a JSON object');
    return v as JsonObject; // every leaf was checked just above
  },
  { type: 'object' },
);

/** The rules as one object, for a decoder written outside this package. */
export const FieldRules = {
  str,
  text,
  anyStr,
  int,
  count,
  between,
  num,
  bool,
  anything,
  anyMap,
  jsonObject,
  matching,
  oneOf,
  optional,
  absentOrNull,
  refused,
  list,
  mapOf,
  shape,
  closed,
  checkedMap,
  written,
  constant,
  orNull,
  describe,
} as const;
