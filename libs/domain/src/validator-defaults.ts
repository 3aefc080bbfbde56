// Defaults of required properties that the arguments leave out, filled into a copy.

interface Fill {
  /** Where the object sits in the value (its path when first filled). */
  path: readonly (string | number)[];
  added: Map<string, unknown>;
}

/**
 * The defaults one evaluation fills, by the object of the value they go into. The value itself is
 * never changed: {@link Fills.apply} copies the objects on the way to each fill, and each default
 * (the schema's own value) is cloned, so the sent arguments never alias the cached schema.
 */
export class Fills {
  private readonly byObject = new Map<object, Fill>();

  has(o: object, key: string): boolean {
    return this.byObject.get(o)?.added.has(key) === true;
  }

  /** The keys filled into `o`, with their defaults. */
  of(o: object): ReadonlyMap<string, unknown> | undefined {
    return this.byObject.get(o)?.added;
  }

  add(o: object, path: readonly (string | number)[], key: string, value: unknown): void {
    let fill = this.byObject.get(o);
    if (fill === undefined) this.byObject.set(o, (fill = { path: [...path], added: new Map() }));
    if (!fill.added.has(key)) fill.added.set(key, value);
  }

  /**
   * A copy of `root` with every default in place. Fills are applied in the order they were made,
   * so a default inside a default already filled finds its parent in the copy.
   */
  apply(root: Record<string, unknown>): Record<string, unknown> {
    const copied = new Set<object>();
    const out = copy(root) as Record<string, unknown>;
    copied.add(out);
    for (const { path, added } of this.byObject.values()) {
      let at: Record<string | number, unknown> = out;
      for (const segment of path) {
        let child = at[segment] as object;
        if (!copied.has(child)) {
          child = copy(child);
          copied.add(child);
          define(at, segment, child);
        }
        at = child as Record<string | number, unknown>;
      }
      for (const [key, value] of added) define(at, key, structuredClone(value));
    }
    return out;
  }
}

function copy(value: object): object {
  return Array.isArray(value) ? value.slice() : { ...value };
}

/** Assign that treats `__proto__` as an ordinary key (JSON arguments may carry one). */
function define(target: Record<string | number, unknown>, key: string | number, value: unknown): void {
  if (key === '__proto__')
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}
