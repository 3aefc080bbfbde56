// Local `$ref` resolution inside one schema document (JSON Schema 2020-12, RFC 6901, RFC 3986).

/** Keys whose values are data, not subschemas: an `$anchor` inside them names nothing. */
const DATA_KEYS = new Set(['enum', 'const', 'default', 'examples']);

/**
 * Resolves `$ref` strings against one root schema. Only fragments are local: `#` (the root),
 * `#/json/pointer` (percent-decoded first, then `~1` → `/` and `~0` → `~` per segment) and
 * `#name` (an `$anchor`). Anything else (a URI naming another document, or an unresolvable
 * fragment) resolves to undefined: the validator leaves that `$ref` to the remote server.
 * Work is charged to `budget` (one unit per pointer segment and per value scanned for anchors).
 */
export class RefResolver {
  private anchors: Map<string, unknown> | undefined;

  constructor(
    private readonly root: unknown,
    private readonly budget: { nodes: number },
  ) {}

  resolve(ref: string): unknown {
    if (!ref.startsWith('#')) return undefined;
    let fragment: string;
    try {
      fragment = decodeURIComponent(ref.slice(1));
    } catch {
      return undefined;
    }
    if (fragment === '') return this.root;
    if (fragment.startsWith('/')) return this.pointer(fragment);
    return this.anchor(fragment);
  }

  private pointer(fragment: string): unknown {
    let current: unknown = this.root;
    for (const raw of fragment.slice(1).split('/')) {
      if (--this.budget.nodes < 0) return undefined;
      const segment = raw.replace(/~1/g, '/').replace(/~0/g, '~');
      if (Array.isArray(current)) {
        if (!/^(0|[1-9][0-9]*)$/.test(segment)) return undefined;
        const index = Number(segment);
        if (index >= current.length) return undefined;
        current = current[index];
      } else if (typeof current === 'object' && current !== null) {
        // Own members only: `#/__proto__` or `#/constructor` name nothing in a JSON document.
        if (!Object.hasOwn(current, segment)) return undefined;
        current = (current as Record<string, unknown>)[segment];
      } else return undefined;
    }
    return current;
  }

  private anchor(name: string): unknown {
    this.anchors ??= this.collectAnchors();
    return this.anchors.get(name);
  }

  /** Every `$anchor` of the document (the first one wins), found by one bounded walk. */
  private collectAnchors(): Map<string, unknown> {
    const anchors = new Map<string, unknown>();
    const stack: unknown[] = [this.root];
    while (stack.length > 0 && --this.budget.nodes >= 0) {
      const v = stack.pop();
      if (typeof v !== 'object' || v === null) continue;
      if (Array.isArray(v)) {
        for (const item of v) stack.push(item);
        continue;
      }
      const o = v as Record<string, unknown>;
      if (typeof o.$anchor === 'string' && Object.hasOwn(o, '$anchor') && !anchors.has(o.$anchor))
        anchors.set(o.$anchor, o);
      for (const key of Object.keys(o)) if (!DATA_KEYS.has(key)) stack.push(o[key]);
    }
    return anchors;
  }
}
