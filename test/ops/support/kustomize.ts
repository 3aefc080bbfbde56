/**
 * A small kustomize: exactly the features deploy/ uses (resources as files or directories,
 * namespace, images, replicas, strategic-merge patches), so the manifests can be rendered and
 * checked where no kubectl is installed (a fresh CI machine; Debian's kubectl is 1.20, whose
 * kustomize is v2 and reads none of this). Where a `kubectl` with kustomize v4+ is on the PATH the
 * deploy test renders with it too and requires the same objects, so this stays honest.
 * Anything else in a kustomization.yaml is refused, not ignored.
 */
import { readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';

export type K8sObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; [k: string]: unknown };
  [k: string]: unknown;
};

const KNOWN = new Set(['apiVersion', 'kind', 'namespace', 'resources', 'images', 'replicas', 'patches']);
const CLUSTER_SCOPED = new Set([
  'Namespace',
  'ClusterRole',
  'ClusterRoleBinding',
  'CustomResourceDefinition',
  'PersistentVolume',
  'StorageClass',
  'PriorityClass',
]);

interface Kustomization {
  namespace?: string;
  resources?: string[];
  images?: Array<{ name: string; newName?: string; newTag?: string; digest?: string }>;
  replicas?: Array<{ name: string; count: number }>;
  patches?: Array<{ path: string }>;
}

function readYamlDocs(file: string): unknown[] {
  return parseAllDocuments(readFileSync(file, 'utf8'))
    .map((d) => {
      if (d.errors.length > 0) throw new Error(`${file}: ${d.errors[0]?.message ?? 'bad YAML'}`);
      return d.toJS() as unknown;
    })
    .filter((d) => d !== null && d !== undefined);
}

function asObject(doc: unknown, where: string): K8sObject {
  const o = doc as Partial<K8sObject>;
  if (
    typeof o !== 'object' ||
    typeof o.apiVersion !== 'string' ||
    typeof o.kind !== 'string' ||
    typeof o.metadata?.name !== 'string'
  ) {
    throw new Error(`${where}: not a Kubernetes object (apiVersion, kind, metadata.name)`);
  }
  return o as K8sObject;
}

const key = (o: K8sObject): string => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;

/** The list fields that strategic merge joins by a key (the rest are replaced), as Kubernetes declares them. */
const MERGE_KEYS: Record<string, string> = {
  containers: 'name',
  initContainers: 'name',
  env: 'name',
  volumes: 'name',
  volumeMounts: 'mountPath',
  topologySpreadConstraints: 'topologyKey',
};

function isPlain(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function strategicMerge(target: unknown, patch: unknown, field = ''): unknown {
  if (patch === null) return undefined;
  if (isPlain(target) && isPlain(patch)) {
    const out: Record<string, unknown> = { ...target };
    for (const [k, v] of Object.entries(patch)) {
      const merged = strategicMerge(target[k], v, k);
      if (merged === undefined) delete out[k];
      else out[k] = merged;
    }
    return out;
  }
  const mergeKey = MERGE_KEYS[field];
  if (mergeKey !== undefined && Array.isArray(target) && Array.isArray(patch)) {
    const out = [...target] as unknown[];
    for (const item of patch) {
      const id = isPlain(item) ? item[mergeKey] : undefined;
      const at = out.findIndex((t) => isPlain(t) && t[mergeKey] === id);
      if (at >= 0) out[at] = strategicMerge(out[at], item);
      else out.push(item);
    }
    return out;
  }
  return structuredClone(patch);
}

function setImages(o: K8sObject, images: NonNullable<Kustomization['images']>): void {
  const visit = (v: unknown, parent: string): void => {
    if (Array.isArray(v)) for (const x of v) visit(x, parent);
    else if (isPlain(v)) {
      if ((parent === 'containers' || parent === 'initContainers') && typeof v['image'] === 'string') {
        const image = v['image'];
        const at = image.search(/[@:][^/]*$/);
        const name = at >= 0 ? image.slice(0, at) : image;
        const suffix = at >= 0 ? image.slice(at) : '';
        const rule = images.find((i) => i.name === name);
        if (rule !== undefined) {
          const tag =
            rule.digest !== undefined ? `@${rule.digest}` : rule.newTag !== undefined ? `:${rule.newTag}` : suffix;
          v['image'] = `${rule.newName ?? name}${tag}`;
        }
      }
      for (const [k, x] of Object.entries(v)) visit(x, k);
    }
  };
  visit(o, '');
}

/** Renders the kustomization in `dir` into its objects, in the order the resources name them. */
export function kustomize(dir: string, seen: string[] = []): K8sObject[] {
  const root = resolve(dir);
  for (const s of seen)
    if (root.startsWith(`${s}/`) || s.startsWith(`${root}/`) || s === root)
      throw new Error(`${root}: a cycle with ${s}`);
  const file = join(root, 'kustomization.yaml');
  const [doc] = readYamlDocs(file);
  const k = (doc ?? {}) as Kustomization & Record<string, unknown>;
  for (const field of Object.keys(k))
    if (!KNOWN.has(field))
      throw new Error(`${file}: field ${field} is not rendered here (test/ops/support/kustomize.ts)`);

  let objects: K8sObject[] = [];
  for (const r of k.resources ?? []) {
    const path = resolve(root, r);
    if (statSync(path).isDirectory()) objects.push(...kustomize(path, [...seen, root]));
    else objects.push(...readYamlDocs(path).map((d) => asObject(structuredClone(d), path)));
  }
  if (k.namespace !== undefined) {
    for (const o of objects) if (!CLUSTER_SCOPED.has(o.kind)) o.metadata.namespace = k.namespace;
  }
  if (k.images !== undefined) for (const o of objects) setImages(o, k.images);
  for (const rep of k.replicas ?? []) {
    const hits = objects.filter(
      (o) => ['Deployment', 'StatefulSet', 'ReplicaSet'].includes(o.kind) && o.metadata.name === rep.name,
    );
    if (hits.length === 0) throw new Error(`${file}: replicas for ${rep.name}, which is not a workload here`);
    for (const o of hits) (o['spec'] as Record<string, unknown>)['replicas'] = rep.count;
  }
  for (const p of k.patches ?? []) {
    const path = resolve(root, p.path);
    for (const d of readYamlDocs(path)) {
      const patch = asObject(d, path);
      const hits = objects.filter(
        (o) =>
          o.kind === patch.kind &&
          o.metadata.name === patch.metadata.name &&
          (patch.metadata.namespace === undefined || o.metadata.namespace === patch.metadata.namespace),
      );
      if (hits.length !== 1) throw new Error(`${path}: the patch of ${key(patch)} matches ${hits.length} objects`);
      const at = objects.indexOf(hits[0] as K8sObject);
      objects = objects.map((o, i) => (i === at ? (strategicMerge(o, patch) as K8sObject) : o));
    }
  }
  const keys = new Set<string>();
  for (const o of objects) {
    if (keys.has(key(o))) throw new Error(`${root}: ${key(o)} twice`);
    keys.add(key(o));
  }
  return objects;
}

export { key as objectKey };
