import { isPlainObject, type JsonObject } from './types.js';
import { jsonSizeExceeds } from './json-measure.js';
import { compileSchema } from './validator-compile.js';
import { evaluateFully } from './validator-evaluate.js';
import {
  DEFAULT_VALIDATION_LIMITS,
  type ArgumentValidator,
  type ValidationLimits,
  type ValidationResult,
} from './validator-types.js';

export { DEFAULT_VALIDATION_LIMITS };
export type { ArgumentValidator, ValidationIssue, ValidationLimits, ValidationResult } from './validator-types.js';

/**
 * A reusable validator for `schema` (compile once per document, call per request), for the
 * JSON Schema 2020-12 keywords a tool's `inputSchema` uses: type, enum, const, minLength,
 * maxLength, minimum, maximum, exclusiveMinimum, exclusiveMaximum, minItems, maxItems,
 * prefixItems, items (a single schema, after prefixItems), properties, required,
 * additionalProperties, dependentRequired, allOf, anyOf, oneOf, not, and local `$ref` (`#`,
 * `#/json/pointer` into `$defs`, `definitions` or anywhere, `#anchor`) evaluated beside its
 * siblings as 2020-12 says. Every other keyword (pattern, format, if/then/else, …) and a `$ref` that
 * names another document or nothing is ignored, leaving it to the remote server.
 *
 * A required property left out whose own subschema has a `default` is filled with it (outside
 * anyOf/oneOf/not branches, where it only counts as present) and checked like a sent value; the
 * result's `filled` is the copy to send.
 *
 * The schema is only read, never changed or expanded: a `$ref` is an edge in the compiled graph,
 * so a recursive schema costs its size. Work is bounded by `limits`: a part of the value past a
 * bound (depth, work, `$ref`s, a `$ref` cycle that consumes no input) is left unchecked and let
 * through (`partial` says where and why), so a hostile schema or value cannot make a call hang and
 * a schema beyond the validator's model never refuses a call its server accepts. Only arguments
 * over `maxBytes` are refused outright (`size`). Issues name the value's JSON pointer and the
 * keyword that failed.
 */
export function compileValidator(schema: JsonObject | boolean, limits?: Partial<ValidationLimits>): ArgumentValidator {
  const lim: ValidationLimits = { ...DEFAULT_VALIDATION_LIMITS, ...limits };
  const root = compileSchema(schema);
  return (value) => {
    if (jsonSizeExceeds(value, lim.maxBytes)) {
      return {
        ok: false,
        errors: [{ path: '', keyword: 'size', message: `arguments are larger than ${lim.maxBytes} bytes of JSON` }],
      };
    }
    const { issues, partial, fills } = evaluateFully(root, value, lim);
    if (issues.length > 0) return { ok: false, errors: issues };
    const result: ValidationResult = { ok: true };
    if (partial !== undefined) result.partial = partial;
    if (fills !== undefined && isPlainObject(value)) result.filled = fills.apply(value);
    return result;
  };
}

const cache = new WeakMap<object, ArgumentValidator>();

/**
 * Validates `value` against `schema` with {@link compileValidator}. With default limits the
 * compiled validator is cached per schema object, so keep document schemas as long-lived objects.
 */
export function validateArguments(
  schema: JsonObject,
  value: unknown,
  limits?: Partial<ValidationLimits>,
): ValidationResult {
  if (limits !== undefined) return compileValidator(schema, limits)(value);
  let validator = cache.get(schema);
  if (validator === undefined) {
    validator = compileValidator(schema);
    cache.set(schema, validator);
  }
  return validator(value);
}
