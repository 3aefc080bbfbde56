import { expect } from 'vitest';
import { WireError } from './errors.js';

/** The field a decoder's refusal names (it must be an invalid_input WireError); shared by the decoders' tests. */
export function refusedField(f: () => unknown): unknown {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(WireError);
    expect((e as WireError).code).toBe('invalid_input');
    return (e as WireError).details.field;
  }
  throw new Error('not refused');
}
