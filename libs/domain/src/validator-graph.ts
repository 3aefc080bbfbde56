// Whole-graph passes over compiled nodes: in-place cycles, and which nodes check anything.
import { TRIVIAL, inPlaceChildren, valueChildren, type Node } from './validator-node.js';

/**
 * The nodes on a cycle of in-place edges (`$ref`, `allOf`, `anyOf`, `oneOf`, `not`): evaluating
 * one of them can come back to it at the same value. Tarjan's algorithm, iterative, so a long
 * chain cannot overflow the stack; linear in nodes and edges.
 */
export function inPlaceCycles(nodes: readonly Node[]): Set<Node> {
  const index = new Map<Node, number>();
  const low = new Map<Node, number>();
  const onStack = new Set<Node>();
  const stack: Node[] = [];
  const cyclic = new Set<Node>();
  // Edges to the shared trivial node lead nowhere.
  const compiled = new Set(nodes);
  const children = new Map<Node, Node[]>();
  const succ = (n: Node): Node[] => {
    let c = children.get(n);
    if (c === undefined) children.set(n, (c = inPlaceChildren(n).filter((m) => compiled.has(m))));
    return c;
  };
  let next = 0;
  const open = (n: Node): void => {
    index.set(n, next);
    low.set(n, next);
    next++;
    stack.push(n);
    onStack.add(n);
  };
  for (const start of nodes) {
    if (index.has(start)) continue;
    open(start);
    const work: [Node, number][] = [[start, 0]];
    while (work.length > 0) {
      const top = work[work.length - 1]!;
      const [v, i] = top;
      const out = succ(v);
      if (i < out.length) {
        top[1] = i + 1;
        const w = out[i]!;
        if (!index.has(w)) {
          open(w);
          work.push([w, 0]);
        } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent !== undefined) low.set(parent[0], Math.min(low.get(parent[0])!, low.get(v)!));
      if (low.get(v) !== index.get(v)) continue;
      const component: Node[] = [];
      let w: Node | undefined;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || out.includes(v)) for (const c of component) cyclic.add(c);
    }
  }
  return cyclic;
}

/**
 * Sets `checks` on every node that can refuse some value: its own keywords, a cycle (refused when
 * reached), or a checking child; an `anyOf` checks only when every branch does (one branch that
 * admits everything makes it admit everything, so it is dropped). Then drops the children that
 * check nothing, so evaluation skips them. Horn-style propagation: linear in nodes and edges.
 */
export function markChecks(nodes: readonly Node[], cyclic: ReadonlySet<Node>): void {
  const parents = new Map<Node, { node: Node; any: boolean }[]>();
  const anyLeft = new Map<Node, number>();
  const edge = (child: Node, parent: Node, any: boolean): void => {
    let list = parents.get(child);
    if (list === undefined) parents.set(child, (list = []));
    list.push({ node: parent, any });
  };
  const queue: Node[] = [];
  const mark = (n: Node): void => {
    if (n.checks) return;
    n.checks = true;
    queue.push(n);
  };
  for (const n of nodes) {
    for (const c of valueChildren(n)) edge(c, n, false);
    if (n.ref !== undefined) edge(n.ref, n, false);
    for (const c of n.allOf ?? []) edge(c, n, false);
    if (n.oneOf?.length === 1) edge(n.oneOf[0]!, n, false);
    if (n.anyOf !== undefined) {
      anyLeft.set(n, n.anyOf.length);
      for (const c of n.anyOf) edge(c, n, true);
    }
  }
  for (const n of nodes) if (hasOwnChecks(n) || cyclic.has(n)) mark(n);
  for (let c = queue.pop(); c !== undefined; c = queue.pop()) {
    for (const { node, any } of parents.get(c) ?? []) {
      if (!any) mark(node);
      else {
        const left = anyLeft.get(node)! - 1;
        anyLeft.set(node, left);
        if (left === 0) mark(node);
      }
    }
  }
  for (const n of nodes) prune(n, anyLeft.get(n) ?? 0);
}

/** Keywords of the node itself that can refuse a value. */
function hasOwnChecks(n: Node): boolean {
  return (
    n.never ||
    n.types !== 0 ||
    n.enumPrimitives !== undefined ||
    n.minLength !== undefined ||
    n.maxLength !== undefined ||
    n.minItems !== undefined ||
    n.maxItems !== undefined ||
    n.minimum !== undefined ||
    n.maximum !== undefined ||
    n.exclusiveMinimum !== undefined ||
    n.exclusiveMaximum !== undefined ||
    n.required !== undefined ||
    n.dependentRequired !== undefined ||
    n.not !== undefined ||
    (n.oneOf !== undefined && n.oneOf.length > 1)
  );
}

function shared(n: Node): Node {
  return n.checks ? n : TRIVIAL;
}

function prune(n: Node, anyLeft: number): void {
  if (n.anyOf !== undefined && anyLeft > 0) n.anyOf = undefined;
  if (n.items !== undefined && !n.items.checks) n.items = undefined;
  if (n.additional !== undefined && !n.additional.checks) n.additional = undefined;
  if (n.ref !== undefined && !n.ref.checks) n.ref = n.refText = undefined;
  if (n.allOf !== undefined) {
    const allOf = n.allOf.filter((c) => c.checks);
    if (allOf.length > 0) n.allOf = allOf;
    else n.allOf = undefined;
  }
  // Positions and names stay while `items` / `additionalProperties` need them to know what is extra.
  if (n.items === undefined && n.prefixItems?.every((c) => !c.checks)) n.prefixItems = undefined;
  if (n.additional === undefined && n.properties !== undefined && [...n.properties.values()].every((c) => !c.checks))
    n.properties = undefined;
  // What stays but checks nothing becomes the shared trivial node, so its own node can be collected.
  if (n.prefixItems !== undefined) n.prefixItems = n.prefixItems.map(shared);
  if (n.oneOf !== undefined) n.oneOf = n.oneOf.map(shared);
  if (n.not !== undefined) n.not = shared(n.not);
  if (n.properties !== undefined) for (const [key, c] of n.properties) if (!c.checks) n.properties.set(key, TRIVIAL);
  n.inPlace =
    n.ref !== undefined ||
    n.allOf !== undefined ||
    n.anyOf !== undefined ||
    n.oneOf !== undefined ||
    n.not !== undefined;
}
