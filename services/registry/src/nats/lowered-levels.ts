import { Permission, inheritPermission, normalizeAnnotations, type RemoteTool } from '@mcpx/domain';

/**
 * The tools whose inherited level a new list would lower from `always_ask` to `act` (a
 * `destructiveHint` gone, a `readOnlyHint` added): what a quiet discovery — a tool list that
 * arrives over the bus, not from the registry's own connection — must never record on its own
 * word, since whoever can publish on the bus could then take the human out of the loop. The
 * caller records such a list only after its own discovery of the server confirms it.
 */
export function loweredLevels(before: readonly RemoteTool[], after: readonly RemoteTool[], builtin = false): string[] {
  const level = (t: RemoteTool): Permission =>
    inheritPermission(normalizeAnnotations(t.annotations), { builtin, toolName: t.name });
  const was = new Map<string, Permission>();
  for (const t of before) if (!was.has(t.name)) was.set(t.name, level(t));
  const lowered: string[] = [];
  const seen = new Set<string>();
  for (const t of after) {
    if (seen.has(t.name)) continue;
    seen.add(t.name);
    if (was.get(t.name) === Permission.always_ask && level(t) === Permission.act) lowered.push(t.name);
  }
  return lowered;
}
