/**
 * What a log line may hold of a caller's fields: a JSON-safe copy with credentials replaced and
 * its size bounded. Pure, so whatever a caller passes, the logger writes only what this returns.
 */

/** Field names whose values are never written, whatever they hold (whole name, any case). */
const REDACTED_NAMES = /^(headers|secretHeaders|key|keys|ciphertext)$/i;
/**
 * Parts of a field name that mark a credential wherever they appear (`access_token`,
 * `clientSecret`, `x-api-key`, `proxy-authorization`, `Set-Cookie`, …). Over-redacting a harmless
 * field costs a detail; under-redacting one costs a secret.
 */
const REDACTED_PARTS =
  /authorization|cookie|secret|token|password|passwd|credential|api[-_]?key|private[-_]?key|access[-_]?key|signing[-_]?key/i;

/** Objects nested deeper than this are written as `[too deep]` (the fields object is level 0). */
export const MAX_DEPTH = 6;
const MAX_ITEMS = 50;
const MAX_FIELDS = 100;
const MAX_STRING = 8_192;

export const REDACTED = '[redacted]';
export const TOO_DEEP = '[too deep]';

export function isRedactedName(name: string): boolean {
  return REDACTED_NAMES.test(name) || REDACTED_PARTS.test(name);
}

/**
 * A copy of `value` safe to `JSON.stringify` and to show: values under credential-like names
 * become `[redacted]`; an `Error` keeps only its name, message, code, stack and cause (its other
 * own fields often hold a request's headers or a response's body); `toJSON` is honoured and what
 * it returns is redacted in turn; bytes are written as their length; objects deeper than
 * `MAX_DEPTH` become `[too deep]`, a reference to an enclosing object `[circular]`; arrays, fields
 * and strings are cut short with a note of how much was left out. Getters may throw: the caller
 * catches.
 */
export function redact(value: unknown, depth = 0, ancestors: object[] = []): unknown {
  if (typeof value === 'string')
    return value.length > MAX_STRING
      ? `${value.slice(0, MAX_STRING)}…[${value.length - MAX_STRING} more characters]`
      : value;
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'function' || typeof value === 'symbol') return undefined;
  if (value === null || typeof value !== 'object') return value;
  if (depth > MAX_DEPTH) return TOO_DEEP;
  if (ancestors.includes(value)) return '[circular]';
  if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer) return `[${value.byteLength} bytes]`;
  const inner = [...ancestors, value];
  if (value instanceof Error) return redactError(value, depth, inner);
  if (Array.isArray(value)) {
    const items = value.slice(0, MAX_ITEMS).map((v) => redact(v, depth + 1, inner));
    return value.length > MAX_ITEMS ? [...items, `[${value.length - MAX_ITEMS} more items]`] : items;
  }
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  // What JSON.stringify would write; one level down, so a toJSON returning itself still ends.
  if (typeof toJSON === 'function') return redact(toJSON.call(value), depth + 1, inner);
  const entries = Object.entries(value);
  const out: Record<string, unknown> = {};
  for (const [k, v] of entries.slice(0, MAX_FIELDS))
    out[k] = isRedactedName(k) ? REDACTED : redact(v, depth + 1, inner);
  if (entries.length > MAX_FIELDS) out['…'] = `[${entries.length - MAX_FIELDS} more fields]`;
  return out;
}

function redactError(err: Error, depth: number, ancestors: object[]): Record<string, unknown> {
  const out: Record<string, unknown> = { name: err.name, message: redact(err.message) };
  const code = (err as { code?: unknown }).code;
  if (code !== undefined) out.code = redact(code, depth + 1, ancestors);
  if (err.stack !== undefined) out.stack = redact(err.stack);
  if (err.cause !== undefined) out.cause = redact(err.cause, depth + 1, ancestors);
  return out;
}
