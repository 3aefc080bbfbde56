import { invalidInput } from '@mcpx/contracts';
import { findBuiltin } from '@mcpx/domain';

/**
 * A custom server never shadows a built-in (docs/names.md#built-in-slugs). Its slug equal to a built-in's is refused by
 * name in both name styles (the unique `(account, name)` index closes the other direction).
 */
export function refuseBuiltinSlug(name: string): void {
  const builtin = findBuiltin(name);
  if (builtin !== undefined)
    throw invalidInput(
      'name',
      `${name} is the slug of the built-in ${builtin.displayName} server; choose another name`,
      { builtin: true },
    );
}
