import { ConfigError } from './config-error.js';

/**
 * The one parser of numeric and on/off settings, for every service's loader: an unset or empty
 * variable is the default; anything else must parse whole, or the service refuses to start with
 * a {@link ConfigError} naming the variable (never echoing its value, which may be a secret's
 * neighbour in a mistyped line).
 */

export interface IntegerSetting<F> {
  /** When the variable is unset or empty. */
  fallback: F;
  /** The least value taken (default 0). */
  min?: number;
  /** The greatest value taken (default `Number.MAX_SAFE_INTEGER`). */
  max?: number;
  /** The refusal's message (default `<NAME> must be an integer of at least <min>`). */
  message?: string;
}

/** A whole number in [min, max] from `env[name]`, else `opts.fallback` when unset or empty. */
export function integerSetting<F extends number | undefined>(
  env: NodeJS.ProcessEnv,
  name: string,
  opts: IntegerSetting<F>,
): number | F {
  const raw = env[name];
  if (raw === undefined || raw === '') return opts.fallback;
  const min = opts.min ?? 0;
  const max = opts.max ?? Number.MAX_SAFE_INTEGER;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < min || n > max)
    throw new ConfigError(name, opts.message ?? `${name} must be an integer of at least ${min}`);
  return n;
}

/** A port number (0 to 65535; 0 picks a free one). */
export function portSetting(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  return integerSetting(env, name, { fallback, min: 0, max: 65_535, message: `${name} must be a port number` });
}

/** A finite number of at least 0 (a rate, a ratio), else `fallback` when unset or empty. */
export function nonNegativeNumberSetting(
  env: NodeJS.ProcessEnv,
  name: string,
  fallback: number,
  message = `${name} must be a non-negative number`,
): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0) throw new ConfigError(name, message);
  return n;
}

/** A non-negative number of `name` where 0 means "the default" (`fallback`), as unset does. */
export function zeroMeansDefaultSetting(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  return nonNegativeNumberSetting(env, name, fallback) || fallback;
}

/** `on`/`true`/`1` or `off`/`false`/`0`, else `fallback` when unset or empty. */
export function onOffSetting(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'on' || raw === 'true' || raw === '1') return true;
  if (raw === 'off' || raw === 'false' || raw === '0') return false;
  throw new ConfigError(name, `${name} must be on or off`);
}
