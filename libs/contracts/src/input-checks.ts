// The checks of input requests and their answers: the restricted schema of an `elicitation/create`
// (`requestedSchema`: a flat object of string, number, integer, boolean and multi-select
// properties, SEP-1330's forms), and an answer's content against it. Field by field, bounded by
// INPUT_LIMITS; a refusal names the field.
import { invalidInput, type WireError } from './errors.js';
import { isMap } from './field-rules.js';
import {
  INPUT_LIMITS,
  type ElicitAnswer,
  type ElicitValue,
  type RestrictedProperty,
  type RestrictedSchema,
} from './inputs.js';

const FORMATS = new Set(['email', 'uri', 'date', 'date-time']);
const KEY_RE = /^[A-Za-z0-9_.-]{1,64}$/;

function boundedText(v: unknown, max: number): string | undefined {
  return typeof v === 'string' ? v.slice(0, max) : undefined;
}

function finite(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

function stringList(v: unknown, max: number): string[] | undefined {
  if (
    !Array.isArray(v) ||
    v.length === 0 ||
    v.length > max ||
    !v.every((s) => typeof s === 'string' && s.length <= INPUT_LIMITS.valueChars)
  )
    return undefined;
  return v as string[];
}

/** `[{const, title}]`, bounded: the titled options of SEP-1330 (a missing title is the value's own). */
function titledOptions(v: unknown): Array<{ const: string; title: string }> | undefined {
  if (!Array.isArray(v) || v.length === 0 || v.length > INPUT_LIMITS.enumValues) return undefined;
  const out: Array<{ const: string; title: string }> = [];
  for (const o of v) {
    if (!isMap(o) || typeof o.const !== 'string' || o.const.length > INPUT_LIMITS.valueChars) return undefined;
    out.push({ const: o.const, title: boundedText(o.title, INPUT_LIMITS.titleChars) ?? o.const });
  }
  return out;
}

/** The values a single select (`enum`, or titled `oneOf`) or a multi-select's items (`enum`, or titled `anyOf`) offer. */
export function offeredValues(p: Record<string, unknown> | undefined): string[] | undefined {
  if (p === undefined) return undefined;
  if (Array.isArray(p.enum)) return p.enum as string[];
  const titled = (p.oneOf ?? p.anyOf) as Array<{ const: string }> | undefined;
  return Array.isArray(titled) ? titled.map((o) => o.const) : undefined;
}

/**
 * Checks a server's `requestedSchema` against the restricted elicitation schema (a flat object of
 * strings with formats, numbers with inclusive bounds, booleans, single- and multi-select enums)
 * and returns a normalized copy holding only what a form can show and an answer can be checked
 * against, bounded; each enum keeps the form the server gave it (SEP-1330: titled `oneOf` /
 * `items.anyOf`, untitled `enum` / `items.enum`, the deprecated `enumNames`), and a default only
 * when it is one of the offered values. Throws `invalid_input` naming `requestedSchema.<path>`: the caller turns it into the
 * server's fault.
 */
export function checkRequestedSchema(schema: unknown, at = 'requestedSchema'): RestrictedSchema {
  if (!isMap(schema) || schema.type !== 'object') throw invalidInput(at, 'must be an object schema ({type: "object"})');
  const props = schema.properties ?? {};
  if (!isMap(props)) throw invalidInput(`${at}.properties`, 'must be a map');
  const names = Object.keys(props);
  if (names.length > INPUT_LIMITS.properties)
    throw invalidInput(`${at}.properties`, `at most ${INPUT_LIMITS.properties} properties`);
  const out: RestrictedSchema = { type: 'object', properties: {} };
  for (const name of names) {
    if (!KEY_RE.test(name)) throw invalidInput(`${at}.properties`, 'property names are 1-64 letters, digits, _ . or -');
    out.properties[name] = checkProperty(props[name], `${at}.properties.${name}`);
  }
  if (schema.required !== undefined) {
    const req = schema.required;
    if (!Array.isArray(req) || !req.every((r) => typeof r === 'string' && Object.hasOwn(out.properties, r)))
      throw invalidInput(`${at}.required`, 'must list properties of the schema');
    out.required = [...new Set(req as string[])];
  }
  return out;
}

function checkProperty(p: unknown, at: string): RestrictedProperty {
  if (!isMap(p)) throw invalidInput(at, 'must be a property schema');
  const common: Record<string, unknown> = {};
  const title = boundedText(p.title, INPUT_LIMITS.titleChars);
  const description = boundedText(p.description, INPUT_LIMITS.descriptionChars);
  if (title !== undefined) common.title = title;
  if (description !== undefined) common.description = description;
  switch (p.type) {
    case 'string':
      return stringProperty(p, at, common);
    case 'number':
    case 'integer': {
      const out: RestrictedProperty = { type: p.type, ...common };
      for (const k of ['minimum', 'maximum'] as const) {
        if (p[k] === undefined) continue;
        const n = finite(p[k]);
        if (n === undefined) throw invalidInput(`${at}.${k}`, 'must be a finite number');
        out[k] = n;
      }
      const d = finite(p.default);
      if (d !== undefined) out.default = d;
      return out;
    }
    case 'boolean': {
      const out: RestrictedProperty = { type: 'boolean', ...common };
      if (typeof p.default === 'boolean') out.default = p.default;
      return out;
    }
    case 'array':
      return multiSelectProperty(p, at, common);
    default:
      throw invalidInput(`${at}.type`, 'must be string, number, integer, boolean or a multi-select array');
  }
}

/** A string property: free text with a format and length bounds, or a single choice. */
function stringProperty(p: Record<string, unknown>, at: string, common: Record<string, unknown>): RestrictedProperty {
  const out: RestrictedProperty = { type: 'string', ...common };
  // Each of SEP-1330's forms is kept as the server wrote it: titled (`oneOf`), untitled
  // (`enum`), or the deprecated titled `enum` with `enumNames`; a client tells them apart.
  let values: string[] | undefined;
  if (p.oneOf !== undefined) {
    const options = titledOptions(p.oneOf);
    if (options === undefined)
      throw invalidInput(`${at}.oneOf`, `must be 1-${INPUT_LIMITS.enumValues} [{const, title}] options`);
    out.oneOf = options;
    values = options.map((o) => o.const);
  } else if (p.enum !== undefined) {
    values = stringList(p.enum, INPUT_LIMITS.enumValues);
    if (values === undefined) throw invalidInput(`${at}.enum`, `must be 1-${INPUT_LIMITS.enumValues} strings`);
    out.enum = values;
    const names = stringList(p.enumNames, INPUT_LIMITS.enumValues);
    if (names !== undefined && names.length === values.length)
      out.enumNames = names.map((n) => n.slice(0, INPUT_LIMITS.titleChars));
  }
  if (p.format !== undefined) {
    if (typeof p.format !== 'string' || !FORMATS.has(p.format))
      throw invalidInput(`${at}.format`, 'must be email, uri, date or date-time');
    out.format = p.format;
  }
  copyCounts(p, at, out, ['minLength', 'maxLength']);
  if (
    typeof p.default === 'string' &&
    p.default.length <= INPUT_LIMITS.valueChars &&
    (values === undefined || values.includes(p.default))
  )
    out.default = p.default;
  return out;
}

/** A multi-select: an array of string options, titled (`items.anyOf`) or untitled (`items.enum`), as the server wrote it (SEP-1330). */
function multiSelectProperty(
  p: Record<string, unknown>,
  at: string,
  common: Record<string, unknown>,
): RestrictedProperty {
  const items = p.items;
  if (!isMap(items)) throw invalidInput(`${at}.items`, 'a multi-select needs items with enum or anyOf');
  const options = items.anyOf !== undefined ? titledOptions(items.anyOf) : undefined;
  const values =
    options?.map((o) => o.const) ??
    (items.type === 'string' ? stringList(items.enum, INPUT_LIMITS.enumValues) : undefined);
  if (values === undefined)
    throw invalidInput(
      `${at}.items`,
      `a multi-select needs 1-${INPUT_LIMITS.enumValues} string options (enum or anyOf [{const, title}])`,
    );
  const out: RestrictedProperty = {
    type: 'array',
    ...common,
    items: options !== undefined ? { anyOf: options } : { type: 'string', enum: values },
  };
  copyCounts(p, at, out, ['minItems', 'maxItems']);
  if (Array.isArray(p.default) && p.default.every((v) => typeof v === 'string' && values.includes(v)))
    out.default = p.default;
  return out;
}

/** Copies the given bounds that are set, each a non-negative integer (else `invalid_input` naming it). */
function copyCounts(
  p: Record<string, unknown>,
  at: string,
  out: RestrictedProperty,
  keys: readonly ('minLength' | 'maxLength' | 'minItems' | 'maxItems')[],
): void {
  for (const k of keys) {
    if (p[k] === undefined) continue;
    const n = finite(p[k]);
    if (n === undefined || !Number.isInteger(n) || n < 0)
      throw invalidInput(`${at}.${k}`, 'must be a non-negative integer');
    out[k] = n;
  }
}

const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const DATE_RE = /^\d{4}-\d{2}-\d{2}$/;
const DATE_TIME_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/;

function formatOk(format: string, v: string): boolean {
  switch (format) {
    case 'email':
      return EMAIL_RE.test(v);
    case 'uri':
      try {
        return new URL(v).protocol.length > 1;
      } catch {
        return false;
      }
    case 'date':
      return DATE_RE.test(v) && !Number.isNaN(Date.parse(`${v}T00:00:00Z`));
    case 'date-time':
      return DATE_TIME_RE.test(v) && !Number.isNaN(Date.parse(v));
    default:
      return true;
  }
}

/**
 * Checks an answer's content against the (normalized) requested schema: only its properties, each
 * of its type and within its bounds, every required one present, at most
 * {@link INPUT_LIMITS.answerBytes} of JSON. Throws `invalid_input` naming `content.<property>`.
 */
export function checkElicitContent(
  schema: RestrictedSchema,
  content: unknown,
  at = 'content',
): Record<string, ElicitValue> {
  if (!isMap(content)) throw invalidInput(at, "must be a map of the form's fields");
  let bytes: number;
  try {
    bytes = Buffer.byteLength(JSON.stringify(content));
  } catch {
    throw invalidInput(at, 'must be JSON');
  }
  if (bytes > INPUT_LIMITS.answerBytes)
    throw invalidInput(at, `must be at most ${INPUT_LIMITS.answerBytes / 1024} KiB of JSON`);
  const out: Record<string, ElicitValue> = {};
  for (const [name, value] of Object.entries(content)) {
    const p = Object.hasOwn(schema.properties, name) ? schema.properties[name] : undefined;
    if (p === undefined) throw invalidInput(`${at}.${name.slice(0, 64)}`, 'is not a field of the form');
    out[name] = checkValue(p, value, `${at}.${name}`);
  }
  for (const r of schema.required ?? []) {
    if (!Object.hasOwn(out, r)) throw invalidInput(`${at}.${r}`, 'is required');
  }
  return out;
}

function checkValue(p: RestrictedProperty, v: unknown, at: string): ElicitValue {
  const fail = (why: string): WireError => invalidInput(at, why);
  switch (p.type) {
    case 'string': {
      if (typeof v !== 'string') throw fail('must be a string');
      if (v.length > INPUT_LIMITS.valueChars) throw fail(`must be at most ${INPUT_LIMITS.valueChars} characters`);
      const min = p.minLength as number | undefined;
      const max = p.maxLength as number | undefined;
      if (min !== undefined && v.length < min) throw fail(`must be at least ${min} characters`);
      if (max !== undefined && v.length > max) throw fail(`must be at most ${max} characters`);
      const offered = offeredValues(p);
      if (offered !== undefined && !offered.includes(v)) throw fail('must be one of the offered values');
      if (typeof p.format === 'string' && !formatOk(p.format, v)) throw fail(`must be a valid ${p.format}`);
      return v;
    }
    case 'number':
    case 'integer': {
      if (typeof v !== 'number' || !Number.isFinite(v)) throw fail('must be a number');
      if (p.type === 'integer' && !Number.isInteger(v)) throw fail('must be an integer');
      if (typeof p.minimum === 'number' && v < p.minimum) throw fail(`must be at least ${p.minimum}`);
      if (typeof p.maximum === 'number' && v > p.maximum) throw fail(`must be at most ${p.maximum}`);
      return v;
    }
    case 'boolean':
      if (typeof v !== 'boolean') throw fail('must be true or false');
      return v;
    case 'array': {
      const options = offeredValues(p.items as Record<string, unknown> | undefined) ?? [];
      if (!Array.isArray(v) || !v.every((x) => typeof x === 'string'))
        throw fail('must be a list of the offered values');
      if (v.length > options.length || new Set(v).size !== v.length) throw fail('must not repeat a value');
      if (!v.every((x) => options.includes(x))) throw fail('must be a list of the offered values');
      if (typeof p.minItems === 'number' && v.length < p.minItems) throw fail(`must pick at least ${p.minItems}`);
      if (typeof p.maxItems === 'number' && v.length > p.maxItems) throw fail(`must pick at most ${p.maxItems}`);
      return v;
    }
  }
}

/** Checks an elicitation answer: `{action, content?}`; content only with `accept`, checked against `schema` when given. */
export function checkElicitAnswer(answer: unknown, schema: RestrictedSchema | undefined, at = 'answer'): ElicitAnswer {
  if (!isMap(answer)) throw invalidInput(at, 'must be {action, content?}');
  const action = answer.action;
  if (action !== 'accept' && action !== 'decline' && action !== 'cancel')
    throw invalidInput(`${at}.action`, 'must be accept, decline or cancel');
  if (action !== 'accept' || schema === undefined) {
    if (answer.content !== undefined && answer.content !== null && action !== 'accept')
      throw invalidInput(`${at}.content`, `is given only with accept`);
    return { action };
  }
  return { action, content: checkElicitContent(schema, answer.content ?? {}, `${at}.content`) };
}
