import type { ToolsDiff } from '@mcpx/db';

/** The change from one name → cid map to another. */
export function diffToolMaps(before: Record<string, string>, after: Record<string, string>): ToolsDiff {
  const added: Record<string, string> = {};
  const changed: Record<string, string> = {};
  const removed: string[] = [];
  for (const [name, cid] of Object.entries(after)) {
    const old = before[name];
    if (old === undefined) added[name] = cid;
    else if (old !== cid) changed[name] = cid;
  }
  for (const name of Object.keys(before)) if (!(name in after)) removed.push(name);
  removed.sort();
  return { added, changed, removed };
}

export function isEmptyDiff(d: ToolsDiff): boolean {
  return Object.keys(d.added).length === 0 && Object.keys(d.changed).length === 0 && d.removed.length === 0;
}

/** The diff as one agent sees it when some names are held by its lambdas. */
export function withoutNames(d: ToolsDiff, held: Set<string>): ToolsDiff {
  if (held.size === 0) return d;
  const keep = (m: Record<string, string>) => Object.fromEntries(Object.entries(m).filter(([n]) => !held.has(n)));
  return { added: keep(d.added), changed: keep(d.changed), removed: d.removed.filter((n) => !held.has(n)) };
}

/**
 * The diff of `names` as an agent sees it when other servers it grants (`rivals`: name → their
 * cids) project some of the same names: a name two servers project goes to neither.
 */
export function sharedNamesDiff(
  names: readonly string[],
  before: Record<string, string>,
  after: Record<string, string>,
  rivals: ReadonlyMap<string, string[]>,
): ToolsDiff {
  const effective = (own: string | undefined, others: string[]): string | undefined => {
    const all = own === undefined ? others : [own, ...others];
    return all.length === 1 ? all[0] : undefined;
  };
  const b: Record<string, string> = {};
  const a: Record<string, string> = {};
  for (const name of names) {
    const others = rivals.get(name) ?? [];
    const was = effective(before[name], others);
    const is = effective(after[name], others);
    if (was !== undefined) b[name] = was;
    if (is !== undefined) a[name] = is;
  }
  return diffToolMaps(b, a);
}
