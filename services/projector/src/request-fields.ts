import { invalidInput } from '@mcpx/contracts';

/**
 * Field checks of the projector's request handlers. `bus.serve` hands a handler a strictly decoded
 * map whose fields nobody has checked yet (the caller is the registry, but anything holding the
 * subject may send): each field is checked before it reaches a query, and a bad one is answered
 * `invalid_input` naming it.
 */

/** Account ids, agent ids and tool names are at most this long. */
export const MAX_ID_LENGTH = 128;

/** A required identifier: a non-empty string of at most {@link MAX_ID_LENGTH} characters. */
export function requireId(value: unknown, field: string): string {
  if (typeof value !== 'string' || value === '' || value.length > MAX_ID_LENGTH)
    throw invalidInput(field, `must be a non-empty string of at most ${MAX_ID_LENGTH} characters`);
  return value;
}

/** An optional identifier: absent, or as {@link requireId}. */
export function optionalId(value: unknown, field: string): string | undefined {
  return value === undefined ? undefined : requireId(value, field);
}

/** A list of at most `max` names, each as {@link requireId} (`field[i]` names a bad one). */
export function nameList(value: unknown, field: string, max: number): string[] {
  if (!Array.isArray(value) || value.length > max) throw invalidInput(field, `must be a list of at most ${max} names`);
  return value.map((n: unknown, i) => requireId(n, `${field}[${i}]`));
}
