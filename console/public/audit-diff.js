// An audit entry's before and after as a person reads them: field by field, only what changed,
// each value short (pure: tested in Node, like the registry's own rules).

/** How deep nested objects are opened into fields (`config.oauth.clientId`); deeper ones are shown whole. */
const MAX_DEPTH = 4;
/** How long one value may be when shown; longer ones end with "…". */
const MAX_VALUE_CHARS = 160;

/** `value` flattened into `path → leaf` (arrays and deep objects are leaves). */
function flatten(value, prefix, out, depth) {
  if (
    value !== null &&
    typeof value === 'object' &&
    !Array.isArray(value) &&
    depth < MAX_DEPTH &&
    (Object.keys(value).length > 0 || prefix === '')
  ) {
    for (const [k, v] of Object.entries(value)) flatten(v, prefix === '' ? k : `${prefix}.${k}`, out, depth + 1);
  } else {
    out.set(prefix === '' ? '(value)' : prefix, value);
  }
  return out;
}

/** A value in a few words: strings as they are, the rest as JSON, bounded. */
export function shortValue(value) {
  if (value === undefined) return '—';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > MAX_VALUE_CHARS ? `${text.slice(0, MAX_VALUE_CHARS)}…` : text;
}

/**
 * The fields that differ between `before` and `after`: `{field, kind, before, after}` with
 * `kind` one of `added`, `removed`, `changed`, in the order the fields first appear.
 * @param {unknown} before
 * @param {unknown} after
 * @returns {Array<{ field: string; kind: 'added' | 'removed' | 'changed'; before: string; after: string }>}
 */
export function auditChanges(before, after) {
  const b = before === undefined ? new Map() : flatten(before, '', new Map(), 0);
  const a = after === undefined ? new Map() : flatten(after, '', new Map(), 0);
  const fields = [...new Set([...b.keys(), ...a.keys()])];
  /** @type {Array<{ field: string; kind: 'added' | 'removed' | 'changed'; before: string; after: string }>} */
  const rows = [];
  for (const field of fields) {
    const had = b.has(field);
    const has = a.has(field);
    const was = b.get(field);
    const is = a.get(field);
    if (had && has && JSON.stringify(was) === JSON.stringify(is)) continue;
    /** @type {'added' | 'removed' | 'changed'} */
    const kind = had && has ? 'changed' : has ? 'added' : 'removed';
    rows.push({ field, kind, before: shortValue(had ? was : undefined), after: shortValue(has ? is : undefined) });
  }
  return rows;
}
