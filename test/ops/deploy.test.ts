/**
 * deploy/: the kustomize base (deploy/k8s) and the production overlay
 * (deploy/overlays/production) rendered, every object validated against the Kubernetes schemas
 * (kubernetes-models), and the project's own rules: every container has requests, limits and
 * /healthz probes; every Deployment a PodDisruptionBudget; the proxy an autoscaler; nothing but the
 * registry and the proxy leaves the cluster, and they never to a cluster-internal range; only the
 * services reach NATS, Postgres and Redis; NATS a three-node JetStream cluster with the project's
 * users. No cluster runs here: this is what `kubectl apply -k` would be handed.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as models from 'kubernetes-models';
import { parse, parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { NatsRoles } from '@mcpx/config';
import { kustomize, objectKey, strategicMerge, type K8sObject } from './support/kustomize.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const BASE = join(ROOT, 'deploy', 'k8s');
const PRODUCTION = join(ROOT, 'deploy', 'overlays', 'production');
const SERVICES = ['registry', 'projector', 'proxy', 'endpoint', 'authorization-server'] as const;
/** Private, carrier-grade NAT, loopback, link-local (metadata), unique-local: the cluster's and the provider's. */
const INTERNAL_V4 = ['10.0.0.0/8', '100.64.0.0/10', '127.0.0.0/8', '169.254.0.0/16', '172.16.0.0/12', '192.168.0.0/16'];
const INTERNAL_V6 = ['::1/128', 'fc00::/7', 'fe80::/10'];

/** `kubectl kustomize` where a kubectl with kustomize v4+ is installed; undefined elsewhere. */
function kubectlKustomize(dir: string): K8sObject[] | undefined {
  const version = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' });
  const v = /Kustomize Version: v(\d+)/.exec(version.stdout ?? '');
  if (version.status !== 0 || v?.[1] === undefined || Number(v[1]) < 4) return undefined;
  const out = spawnSync('kubectl', ['kustomize', dir], { encoding: 'utf8' });
  if (out.status !== 0) throw new Error(`kubectl kustomize ${dir}: ${out.stderr}`);
  return parseAllDocuments(out.stdout).map((d) => d.toJS() as K8sObject);
}

type ModelClass = new (data: unknown) => { validate(): void };

/** The kubernetes-models class of an object's apiVersion and kind (core: `v1`, `networking.k8s.io/v1`: `networkingK8sIo.v1`). */
function modelOf(o: K8sObject): ModelClass {
  const [group, version] = o.apiVersion.includes('/') ? o.apiVersion.split('/') : ['', o.apiVersion];
  const groupKey = (group ?? '').replace(/\.([a-z])/g, (_, c: string) => c.toUpperCase());
  const lib = models as unknown as Record<string, Record<string, Record<string, ModelClass>>>;
  const cls =
    group === ''
      ? (lib[version ?? ''] as unknown as Record<string, ModelClass> | undefined)?.[o.kind]
      : lib[groupKey]?.[version ?? '']?.[o.kind];
  if (cls === undefined) throw new Error(`no Kubernetes schema for ${o.apiVersion} ${o.kind}`);
  return cls;
}

const byKind = (objs: K8sObject[], kind: string): K8sObject[] => objs.filter((o) => o.kind === kind);
const sorted = (objs: K8sObject[]): Record<string, unknown> =>
  Object.fromEntries(objs.map((o): [string, K8sObject] => [objectKey(o), o]).sort(([a], [b]) => a.localeCompare(b)));

type Any = Record<string, any>;

function selects(selector: Any | undefined, labels: Record<string, string>): boolean {
  if (selector === undefined) return true;
  for (const [k, v] of Object.entries((selector['matchLabels'] ?? {}) as Record<string, string>))
    if (labels[k] !== v) return false;
  for (const e of (selector['matchExpressions'] ?? []) as Any[]) {
    const has = e['key'] in labels;
    const value = labels[e['key']];
    if (e['operator'] === 'In' && !(has && (e['values'] as string[]).includes(value ?? ''))) return false;
    if (e['operator'] === 'NotIn' && has && (e['values'] as string[]).includes(value ?? '')) return false;
    if (e['operator'] === 'Exists' && !has) return false;
    if (e['operator'] === 'DoesNotExist' && has) return false;
  }
  return true;
}

/** The egress rules that apply to a pod of this Deployment, from every NetworkPolicy of its namespace that selects it. */
function egressOf(objs: K8sObject[], deployment: K8sObject): Any[] {
  const labels = (deployment as Any)['spec']['template']['metadata']['labels'] as Record<string, string>;
  return byKind(objs, 'NetworkPolicy')
    .filter(
      (p) =>
        p.metadata.namespace === deployment.metadata.namespace && selects((p as Any)['spec']['podSelector'], labels),
    )
    .flatMap((p) => ((p as Any)['spec']['egress'] ?? []) as Any[]);
}

function checkRules(objs: K8sObject[], production: boolean): void {
  const deployments = byKind(objs, 'Deployment');
  expect(deployments.map((d) => d.metadata.name).sort()).toEqual([...SERVICES].sort());
  for (const d of deployments) {
    const spec = (d as Any)['spec'];
    const pod = spec['template']['spec'];
    expect(pod['securityContext']['runAsNonRoot'], d.metadata.name).toBe(true);
    for (const c of pod['containers'] as Any[]) {
      const where = `${d.metadata.name}/${c['name']}`;
      for (const r of ['cpu', 'memory']) {
        expect(c['resources']?.['requests']?.[r], `${where} requests.${r}`).toBeDefined();
        expect(c['resources']?.['limits']?.[r], `${where} limits.${r}`).toBeDefined();
      }
      for (const probe of ['readinessProbe', 'livenessProbe'])
        expect(c[probe]?.['httpGet']?.['path'], `${where} ${probe}`).toBe('/healthz');
      expect(c['securityContext']['readOnlyRootFilesystem'], where).toBe(true);
      expect(c['securityContext']['allowPrivilegeEscalation'], where).toBe(false);
      if (production) expect(c['image'], `${where}: a pinned image`).not.toMatch(/:latest$|^[^:@]+$/);
    }
    // A PodDisruptionBudget selects it and still lets one pod go.
    const labels = spec['template']['metadata']['labels'] as Record<string, string>;
    const pdbs = byKind(objs, 'PodDisruptionBudget').filter((p) => selects((p as Any)['spec']['selector'], labels));
    expect(pdbs.length, `${d.metadata.name}: one PodDisruptionBudget`).toBe(1);
    const pdb = (pdbs[0] as Any)['spec'];
    if (pdb['minAvailable'] !== undefined) expect(pdb['minAvailable']).toBeLessThan(spec['replicas']);
    // No Service routes to the internal port (/metrics and /stats describe every account).
    for (const s of byKind(objs, 'Service').filter((s) =>
      selects({ matchLabels: (s as Any)['spec']['selector'] ?? { none: 'x' } }, labels),
    )) {
      for (const p of (s as Any)['spec']['ports'] as Any[])
        expect(p['targetPort'], `${s.metadata.name}`).not.toBe('internal');
    }
  }

  // The proxy and the endpoint scale on their own.
  const hpas = byKind(objs, 'HorizontalPodAutoscaler');
  expect(hpas.map((h) => (h as Any)['spec']['scaleTargetRef']['name']).sort()).toEqual(['endpoint', 'proxy']);
  for (const h of hpas) {
    const hpa = (h as Any)['spec'];
    const target = deployments.find((d) => d.metadata.name === hpa['scaleTargetRef']['name']) as Any;
    expect(hpa['minReplicas']).toBeGreaterThanOrEqual(2);
    expect(hpa['minReplicas']).toBeLessThanOrEqual(target['spec']['replicas']);
    expect(hpa['maxReplicas']).toBeGreaterThan(hpa['minReplicas']);
  }

  // Network: every mcpx pod starts from nothing in and nothing out.
  const deny = byKind(objs, 'NetworkPolicy').find((p) => p.metadata.name === 'mcpx-default-deny') as Any;
  expect(deny['spec']['policyTypes'].sort()).toEqual(['Egress', 'Ingress']);
  expect(deny['spec']['ingress'] ?? []).toEqual([]);
  expect(deny['spec']['egress'] ?? []).toEqual([]);
  for (const d of deployments)
    expect(
      selects(deny['spec']['podSelector'], (d as Any)['spec']['template']['metadata']['labels']),
      d.metadata.name,
    ).toBe(true);

  const slices = byKind(objs, 'EndpointSlice');
  const datastore = (name: string): string[] =>
    (slices.find((s) => s.metadata.name === `${name}-external`) as Any)['endpoints'].flatMap(
      (e: Any) => e['addresses'] as string[],
    );
  const datastores: Record<string, { port: number; addresses: string[] }> = {
    postgres: { port: 5432, addresses: datastore('postgres') },
    redis: { port: 6379, addresses: datastore('redis') },
  };
  for (const d of deployments) {
    const name = d.metadata.name;
    const egress = egressOf(objs, d);
    const reached = new Set<string>();
    for (const rule of egress) {
      // A rule with no destination would open everything.
      expect(rule['to']?.length, `${name}: an egress rule without a destination`).toBeGreaterThan(0);
      for (const to of rule['to'] as Any[]) {
        if (to['ipBlock'] !== undefined) {
          const { cidr, except = [] } = to['ipBlock'] as { cidr: string; except?: string[] };
          if (cidr === '0.0.0.0/0' || cidr === '::/0') {
            // The outside: only the registry, the proxy and the authorization server (client ID metadata
            // documents), never a cluster-internal range.
            expect(['registry', 'proxy', 'authorization-server'], `${name} may not leave the cluster`).toContain(name);
            for (const internal of cidr === '::/0' ? INTERNAL_V6 : INTERNAL_V4)
              expect(except, `${name}: ${internal} cut out`).toContain(internal);
            reached.add('outside');
          } else {
            // Anything narrower is a datastore's own address, on its port only.
            const store = Object.entries(datastores).find(([, s]) => s.addresses.map((a) => `${a}/32`).includes(cidr));
            expect(store, `${name}: ${cidr} is a datastore's address`).toBeDefined();
            expect((rule['ports'] as Any[]).map((p) => p['port'])).toEqual([store?.[1].port]);
            reached.add(store?.[0] ?? '');
          }
        } else {
          const ns = to['namespaceSelector']?.['matchLabels']?.['kubernetes.io/metadata.name'];
          expect(['kube-system', 'nats', 'observability'], `${name}: egress to namespace ${String(ns)}`).toContain(ns);
          expect(rule['ports']?.length, `${name}: egress to ${String(ns)} names its ports`).toBeGreaterThan(0);
          reached.add(ns);
        }
      }
    }
    // The projector needs no Redis; the endpoint needs it (its failed-token limit) but never the
    // outside; the authorization server needs no NATS.
    const expected =
      name === 'projector'
        ? ['kube-system', 'nats', 'observability', 'postgres']
        : name === 'endpoint'
          ? ['kube-system', 'nats', 'observability', 'postgres', 'redis']
          : name === 'authorization-server'
            ? ['kube-system', 'observability', 'outside', 'postgres', 'redis']
            : ['kube-system', 'nats', 'observability', 'outside', 'postgres', 'redis'];
    expect([...reached].sort(), `${name} reaches`).toEqual(expected);
  }

  // NATS takes clients from the services (and the runtime's labelled namespaces) only.
  const nats = byKind(objs, 'NetworkPolicy').filter((p) => p.metadata.namespace === 'nats');
  if (production) {
    expect(nats.map((p) => p.metadata.name)).toEqual(['nats']);
    const rules = (nats[0] as Any)['spec']['ingress'] as Any[];
    for (const r of rules) expect(r['from']?.length, 'a NATS ingress rule without a source').toBeGreaterThan(0);
    const client = rules.find((r) => (r['ports'] as Any[]).some((p) => p['port'] === 4222)) as Any;
    expect(client['from']).toContainEqual({
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'mcpx' } },
      podSelector: { matchLabels: { 'app.kubernetes.io/part-of': 'mcpx' } },
    });
    expect(JSON.stringify(client['from'])).not.toContain('ipBlock');
  }

  // Secrets carry placeholders only.
  for (const s of byKind(objs, 'Secret')) {
    for (const [k, v] of Object.entries(((s as Any)['stringData'] ?? {}) as Record<string, string>)) {
      if (v !== '') expect(v, `${s.metadata.name}.${k}`).toContain('CHANGE_ME');
    }
    expect((s as Any)['data'], `${s.metadata.name}: no base64 data`).toBeUndefined();
  }
}

describe('deploy/: kustomize base and production overlay', () => {
  const rendered = { base: kustomize(BASE), production: kustomize(PRODUCTION) };

  it.each(['base', 'production'] as const)(
    '%s: the renderer here and `kubectl kustomize` (where installed) give the same objects',
    (which) => {
      const viaKubectl = kubectlKustomize(which === 'base' ? BASE : PRODUCTION);
      if (viaKubectl === undefined) {
        // No kubectl with kustomize v4+ on this machine: the rendering below is ours alone.
        console.warn('deploy test: no kubectl with kustomize v4+; rendered with test/ops/support/kustomize.ts only');
        return;
      }
      expect(sorted(rendered[which])).toEqual(sorted(viaKubectl));
    },
  );

  it.each(['base', 'production'] as const)('%s: every object is valid against the Kubernetes schemas', (which) => {
    expect(rendered[which].length).toBeGreaterThan(20);
    for (const o of rendered[which]) {
      const Model = modelOf(o);
      expect(() => new Model(o).validate(), objectKey(o)).not.toThrow();
    }
  });

  it('the schema check is real: a broken object is refused', () => {
    const proxy = structuredClone(
      rendered.production.find((o) => o.kind === 'Deployment' && o.metadata.name === 'proxy'),
    ) as Any;
    proxy['spec']['template']['spec']['containers'][0]['resources']['limits']['cpu'] = { many: true };
    expect(() => new (modelOf(proxy as K8sObject))(proxy).validate()).toThrow(/limits\/cpu/);
    const policy = structuredClone(rendered.base.find((o) => o.metadata.name === 'mcpx-outside')) as Any;
    policy['spec']['egress'][0]['to'][0]['ipBlock'] = { except: ['10.0.0.0/8'] };
    expect(() => new (modelOf(policy as K8sObject))(policy).validate()).toThrow(/cidr/);
  });

  it.each(['base', 'production'] as const)(
    "%s: the project's rules (limits, probes, budgets, autoscaler, who reaches what)",
    (which) => {
      checkRules(rendered[which], which === 'production');
    },
  );

  it('the rules are real: a projector allowed out, or an outside rule that keeps 10.0.0.0/8, fails them', () => {
    const leaky = structuredClone(rendered.production);
    const outside = leaky.find((o) => o.metadata.name === 'mcpx-outside') as Any;
    outside['spec']['podSelector'] = { matchLabels: { 'app.kubernetes.io/part-of': 'mcpx' } };
    expect(() => checkRules(leaky, true)).toThrow(/projector may not leave the cluster/);
    const internal = structuredClone(rendered.production);
    const rule = (internal.find((o) => o.metadata.name === 'mcpx-outside') as Any)['spec']['egress'][0]['to'][0][
      'ipBlock'
    ];
    rule['except'] = (rule['except'] as string[]).filter((c) => c !== '10.0.0.0/8');
    expect(() => checkRules(internal, true)).toThrow(/10\.0\.0\.0\/8 cut out/);
    const noLimits = structuredClone(rendered.production);
    delete (noLimits.find((o) => o.metadata.name === 'registry' && o.kind === 'Deployment') as Any)['spec']['template'][
      'spec'
    ]['containers'][0]['resources']['limits']['cpu'];
    expect(() => checkRules(noLimits, true)).toThrow(/limits\.cpu/);
  });

  it('production: more replicas, a pinned image, the proxy and the endpoint autoscaled from 3 pods, pods spread over nodes', () => {
    const d = (name: string): Any =>
      rendered.production.find((o) => o.kind === 'Deployment' && o.metadata.name === name) as Any;
    expect(SERVICES.map((s) => d(s)['spec']['replicas'])).toEqual([3, 2, 3, 3, 2]);
    for (const s of SERVICES) {
      expect(d(s)['spec']['template']['spec']['containers'][0]['image']).toBe('ghcr.io/example/mcpx:0.1.0');
      expect(d(s)['spec']['template']['spec']['topologySpreadConstraints'][0]['topologyKey']).toBe(
        'kubernetes.io/hostname',
      );
      // The patch merged into the container: its probes and env are still there.
      expect(d(s)['spec']['template']['spec']['containers'][0]['env'].length).toBeGreaterThan(3);
    }
    for (const h of rendered.production.filter((o) => o.kind === 'HorizontalPodAutoscaler'))
      expect((h as Any)['spec']['minReplicas']).toBe(3);
  });

  it('strategic merge joins containers by name and replaces plain lists', () => {
    const merged = strategicMerge(
      { containers: [{ name: 'a', image: 'x', env: [{ name: 'E', value: '1' }] }], args: ['1'] },
      { containers: [{ name: 'a', env: [{ name: 'F', value: '2' }] }], args: ['2'] },
    );
    expect(merged).toEqual({
      containers: [
        {
          name: 'a',
          image: 'x',
          env: [
            { name: 'E', value: '1' },
            { name: 'F', value: '2' },
          ],
        },
      ],
      args: ['2'],
    });
  });
});

describe('deploy/: NATS from the official chart', () => {
  const values = parse(readFileSync(join(ROOT, 'deploy', 'nats-values.yaml'), 'utf8')) as Any;
  const auth = parse(readFileSync(join(ROOT, 'deploy', 'nats-auth-values.yaml'), 'utf8')) as Any;

  it('a three-node cluster with JetStream on persistent volumes, one server per node, a disruption budget', () => {
    expect(values['config']['cluster']).toMatchObject({ enabled: true, replicas: 3 });
    expect(values['config']['jetstream']).toMatchObject({
      enabled: true,
      fileStore: { enabled: true, pvc: { enabled: true } },
    });
    expect(values['podTemplate']['topologySpreadConstraints']['kubernetes.io/hostname']).toMatchObject({
      maxSkew: 1,
      whenUnsatisfiable: 'DoNotSchedule',
    });
    expect(values['podDisruptionBudget']).toEqual({ enabled: true });
    expect(values['container']['merge']['resources']['limits']['memory']).toBeDefined();
  });

  it("the project's users, each password read from the Secret, none anonymous", () => {
    const users = auth['config']['merge']['authorization']['users'] as Any[];
    expect(users.map((u) => u['user']).sort()).toEqual([...NatsRoles].sort());
    for (const u of users) expect(u['password']).toMatch(/^<< \$NATS_[A-Z]+_PASSWORD >>$/);
    for (const role of NatsRoles) {
      expect(auth['container']['env'][`NATS_${role.toUpperCase()}_PASSWORD`]).toEqual({
        valueFrom: { secretKeyRef: { name: 'mcpx-nats-users', key: role } },
      });
    }
    expect(auth['config']['merge']['no_auth_user']).toBeUndefined();
  });
});
