// Parts of an input schema the validator will refuse to evaluate, found before any call.
import { DEFAULT_VALIDATION_LIMITS } from './validator-types.js';
import { compileGraph, type CompiledGraph } from './validator-compile.js';
import { inPlaceChildren, valueChildren, type Node } from './validator-node.js';
import { inPlaceCycles } from './validator-graph.js';

/** Schema values walked at most to name where a fault sits. */
const MAX_LOCATE_STEPS = 200_000;

/**
 * Why calls that reach some part of `schema` will be refused, or undefined when none will: a
 * `$ref` cycle that consumes no input, or a chain of more than `maxRefDepth` (default 64) `$ref`s
 * in a row. The reason names the part by its JSON pointer in the schema. Discovery can show it in
 * the server's status, so a hostile or broken schema is visible before an agent trips on it.
 * Bounded like compiling (linear in the schema, no recursion).
 */
export function inputSchemaFault(schema: unknown, maxRefDepth = DEFAULT_VALIDATION_LIMITS.maxRefDepth): string | undefined {
  const graph = compileGraph(schema);
  if (!graph.root.checks) return undefined;
  const reachable = reachableFrom(graph.root);
  // Cycles of the pruned graph: one behind a branch that admits everything is never entered.
  const cyclic = inPlaceCycles(reachable);
  for (const n of reachable) {
    if (cyclic.has(n)) return `the input schema has a $ref cycle that consumes no input at ${locate(schema, graph, n)}`;
  }
  const chains = refChains(reachable, cyclic);
  for (const n of reachable) {
    if ((chains.get(n) ?? 0) > maxRefDepth) return `the input schema chains more than ${maxRefDepth} $refs in a row at ${locate(schema, graph, n)}`;
  }
  return undefined;
}

/** Checked nodes reachable from `root` after pruning, in depth-first order. */
function reachableFrom(root: Node): Node[] {
  const seen = new Set<Node>([root]);
  const order: Node[] = [];
  const stack = [root];
  for (let n = stack.pop(); n !== undefined; n = stack.pop()) {
    order.push(n);
    const next = [...inPlaceChildren(n), ...valueChildren(n)].reverse();
    for (const c of next) {
      if (!c.checks || seen.has(c)) continue;
      seen.add(c);
      stack.push(c);
    }
  }
  return order;
}

/** The most `$ref`s in a row from each node through in-place keywords (cycle nodes count 0: reported apart). */
function refChains(nodes: readonly Node[], cyclic: ReadonlySet<Node>): Map<Node, number> {
  const length = new Map<Node, number>();
  for (const start of nodes) {
    if (length.has(start) || cyclic.has(start)) continue;
    // Iterative post-order: a node's length is known once its in-place children's are.
    const stack: [Node, boolean][] = [[start, false]];
    while (stack.length > 0) {
      const [n, expanded] = stack.pop()!;
      if (length.has(n)) continue;
      const children = inPlaceChildren(n).filter((c) => c.checks && !cyclic.has(c));
      if (!expanded) {
        stack.push([n, true]);
        for (const c of children) if (!length.has(c)) stack.push([c, false]);
        continue;
      }
      let best = 0;
      for (const c of children) best = Math.max(best, (length.get(c) ?? 0) + (c === n.ref ? 1 : 0));
      length.set(n, best);
    }
  }
  return length;
}

/** The JSON pointer of the first schema object (breadth first) compiled to `target`. */
function locate(schema: unknown, graph: CompiledGraph, target: Node): string {
  const queue: [unknown, string][] = [[schema, '']];
  for (let i = 0; i < queue.length && i < MAX_LOCATE_STEPS; i++) {
    const [value, at] = queue[i]!;
    if (typeof value !== 'object' || value === null) continue;
    if (!Array.isArray(value) && graph.nodeOf(value) === target) return at === '' ? '/' : at;
    for (const key of Object.keys(value)) {
      queue.push([(value as Record<string, unknown>)[key], `${at}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`]);
    }
  }
  return '(somewhere in the schema)';
}
