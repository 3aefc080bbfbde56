/** A small argument parser: positionals, `--flag value`, `--flag=value`, repeatable flags, booleans. */
export interface ParsedArgs {
  positionals: string[];
  flags: Map<string, string[]>;
}

const BOOLEAN_FLAGS = new Set([
  'json',
  'force',
  'help',
  'done',
  'decline',
  'cancel',
  'user-may-approve',
  'failed',
  'figures',
  'task',
  'no-wait',
]);

export class UsageError extends Error {}

/** `value`, when it is one of `allowed` (typed as it), else a usage error saying `says`. */
export function oneOfFlag<const V extends string>(
  value: string | undefined,
  allowed: readonly V[],
  says: string,
): V | undefined {
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value)) throw new UsageError(says);
  return value as V; // one of `allowed`, checked just above
}

/** How a command shows its answer: `value` as JSON under `--json`, else `human()`. */
export type Print = (value: unknown, human: () => string) => void;

export function parseArgs(argv: string[]): ParsedArgs {
  const positionals: string[] = [];
  const flags = new Map<string, string[]>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] ?? '';
    if (a === '--') {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (a.startsWith('--')) {
      const eq = a.indexOf('=');
      const name = eq > 0 ? a.slice(2, eq) : a.slice(2);
      let value: string;
      if (eq > 0) value = a.slice(eq + 1);
      else if (BOOLEAN_FLAGS.has(name)) value = 'true';
      else {
        const next = argv[i + 1];
        if (next === undefined) throw new UsageError(`--${name} needs a value`);
        value = next;
        i++;
      }
      flags.set(name, [...(flags.get(name) ?? []), value]);
    } else {
      positionals.push(a);
    }
  }
  return { positionals, flags };
}

/** The positional at `index`, or a usage error naming `what` is missing. */
export function need(args: ParsedArgs, index: number, what: string): string {
  const v = args.positionals[index];
  if (v === undefined) throw new UsageError(`missing ${what}`);
  return v;
}

export function flag(args: ParsedArgs, name: string): string | undefined {
  return args.flags.get(name)?.at(-1);
}

export function flags(args: ParsedArgs, name: string): string[] {
  return args.flags.get(name) ?? [];
}

/** `K=V` pairs of repeatable header flags. */
export function keyValues(values: string[], flagName: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const v of values) {
    const eq = v.indexOf('=');
    if (eq <= 0) throw new UsageError(`--${flagName} takes NAME=VALUE`);
    out[v.slice(0, eq)] = v.slice(eq + 1);
  }
  return out;
}
