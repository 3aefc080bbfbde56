import { Permission, isPlainObject } from './types.js';
import type { ToolAnnotations } from './types.js';

/** Verbs that only look at things: a built-in tool named after one runs without asking. */
export const READ_VERBS: ReadonlySet<string> = new Set([
  'get',
  'list',
  'search',
  'read',
  'find',
  'fetch',
  'query',
  'describe',
  'show',
  'view',
]);
/** Verbs that change things: a built-in tool named after one always asks. */
export const WRITE_VERBS: ReadonlySet<string> = new Set([
  'create',
  'update',
  'delete',
  'remove',
  'send',
  'write',
  'post',
  'put',
  'patch',
  'set',
  'drop',
  'archive',
  'move',
  'merge',
  'close',
]);

/**
 * The permission a remote tool inherits from the annotations its server publishes (docs/call.md#permissions):
 * `destructiveHint: true` → always_ask (checked first, so it wins over a contradictory
 * `readOnlyHint`); `readOnlyHint: true` → act; neither → act on a custom server, because
 * connecting it was the trust decision. A built-in server falls back to a name heuristic: any
 * write verb in `toolName` (the remote name) → always_ask, else any read verb → act, else
 * always_ask. Writes are checked first so `get_or_create_x` asks.
 */
export function inheritPermission(
  annotations: ToolAnnotations | undefined,
  context: { builtin: boolean; toolName: string },
): Permission {
  const hints: Partial<ToolAnnotations> = isPlainObject(annotations) ? annotations : {};
  if (hints.destructiveHint === true) return Permission.always_ask;
  if (hints.readOnlyHint === true) return Permission.act;
  if (!context.builtin) return Permission.act;
  const words = nameWords(context.toolName);
  if (words.some((w) => WRITE_VERBS.has(w))) return Permission.always_ask;
  if (words.some((w) => READ_VERBS.has(w))) return Permission.act;
  return Permission.always_ask;
}

/** Lowercase words of a tool name: `createIssue`, `create_issue`, `create-issue`, `CREATE.ISSUE` → create, issue. */
export function nameWords(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w !== '');
}
