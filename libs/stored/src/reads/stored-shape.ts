import { decodePayload, encodePayload, WireError, type Rule } from '@mcpx/contracts';

/**
 * A stored column that does not hold the shape its writer encodes: a row written by another
 * version, or by hand. `code` is stable; `column` names the table and column, `field` the first
 * value that is wrong (`tools_cbor[2].name`). Its message names them and never a value.
 */
export class StoredShapeError extends Error {
  readonly code = 'stored_shape_invalid';
  constructor(
    readonly column: string,
    readonly field: string,
    reason: string,
  ) {
    super(`${column}: ${field} ${reason}`);
    this.name = 'StoredShapeError';
  }
}

/**
 * One stored shape: the encoding its writer stores and the decoding its readers use, with the
 * rule that checks a row on decode (so a reader never casts). `encode` runs the same rule first,
 * so a writer cannot store what a reader would refuse.
 */
export interface StoredShape<T> {
  readonly column: string;
  encode(value: T): Uint8Array;
  decode(bytes: Uint8Array): T;
  /** The rule alone, for a value Postgres has already decoded (a `jsonb` column). */
  check(value: unknown): T;
}

/** `rule`'s refusal as a {@link StoredShapeError} of `column`; anything else is rethrown. */
function checked<T>(column: string, rule: Rule<T>, value: unknown): T {
  try {
    return rule(value, column.slice(column.lastIndexOf('.') + 1));
  } catch (err) {
    if (err instanceof WireError) {
      // A rule's refusal reads `<field>: <reason>` and names the field in its details.
      const field = typeof err.details?.field === 'string' ? err.details.field : 'value';
      const reason = err.message.startsWith(`${field}: `) ? err.message.slice(field.length + 2) : 'is malformed';
      throw new StoredShapeError(column, field, reason);
    }
    throw err;
  }
}

/** A CBOR column (`*_cbor`) checked by `rule` both ways. */
export function cborShape<T>(column: string, rule: Rule<T>): StoredShape<T> {
  return {
    column,
    encode: (value) => encodePayload(checked(column, rule, value)),
    decode: (bytes) => {
      let value: unknown;
      try {
        value = decodePayload<unknown>(bytes);
      } catch {
        throw new StoredShapeError(column, column.slice(column.lastIndexOf('.') + 1), 'is not CBOR');
      }
      return checked(column, rule, value);
    },
    check: (value) => checked(column, rule, value),
  };
}

/** A `jsonb` column checked by `rule` both ways; `encode` gives the JSON text the column is written with. */
export function jsonShape<T>(
  column: string,
  rule: Rule<T>,
): { readonly column: string; encode(value: T): string; check(value: unknown): T } {
  return {
    column,
    encode: (value) => JSON.stringify(checked(column, rule, value)),
    check: (value) => checked(column, rule, value),
  };
}
