import { invalidInput } from '@mcpx/contracts';

/** A JSON object (not null, not an array): what a request's nested fields must be before they are read. */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Refuses a field `obj` may not hold, naming it under `field` (`config.x`). */
export function onlyKeys(obj: Record<string, unknown>, allowed: string[], field: string): void {
  for (const k of Object.keys(obj))
    if (!allowed.includes(k)) throw invalidInput(`${field}.${k}`, 'is not a known field');
}
