/**
 * Whether a value nests deeper than `max` levels (iterative, so a hostile value cannot overflow
 * the stack; call it on values already size-bounded). Content blocks and relayed log data are
 * held to a depth the bus's strict decoder takes.
 */
export function nestsDeeper(value: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth >= max) return true;
    for (const item of Array.isArray(v) ? (v as unknown[]) : Object.values(v)) stack.push([item, depth + 1]);
  }
  return false;
}
