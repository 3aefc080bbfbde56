// The house's floors, written down as a lint rule: which workspace packages each package may
// import, and that a relative import never leaves its package. The README's layout section draws the same picture.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

/** Libraries and the workspace libraries each may import (a lower floor only; none: a foundation). */
export const LIBRARY_FLOORS = {
  '@mcpx/domain': [],
  '@mcpx/config': [],
  '@mcpx/db': [],
  '@mcpx/shared-state': [],
  '@mcpx/log': [],
  '@mcpx/mcp-client': [],
  '@mcpx/outbound': [],
  '@mcpx/inbound': ['@mcpx/config'],
  '@mcpx/telemetry': [],
  '@mcpx/contracts': ['@mcpx/domain'],
  '@mcpx/secrets': ['@mcpx/config'],
  '@mcpx/bus': ['@mcpx/contracts', '@mcpx/telemetry'],
  '@mcpx/envelope': ['@mcpx/contracts'],
  '@mcpx/proxy-client': ['@mcpx/contracts', '@mcpx/domain', '@mcpx/telemetry'],
  '@mcpx/stored': ['@mcpx/contracts', '@mcpx/db', '@mcpx/domain', '@mcpx/secrets'],
};

const LIBRARIES = Object.keys(LIBRARY_FLOORS);

/**
 * Services and the CLI stand on the libraries and never on each other; the registry also serves
 * the console's static files. The console's own code imports nothing of the workspace.
 */
export const TOP_FLOORS = {
  '@mcpx/registry': [...LIBRARIES, '@mcpx/console'],
  '@mcpx/proxy': LIBRARIES,
  '@mcpx/projector': LIBRARIES,
  '@mcpx/endpoint': LIBRARIES,
  '@mcpx/authorization-server': LIBRARIES,
  '@mcpx/cli': LIBRARIES,
  '@mcpx/console': [],
};

const ALLOWED = { ...LIBRARY_FLOORS, ...TOP_FLOORS };

/**
 * The one relative import allowed to leave its package: the console's type declarations
 * (`console/public/*.d.ts`) import the action map's types from the contracts library's sources, so
 * the console's plain JavaScript is type-checked against it (tsconfig.public.json) while the
 * browser loads nothing of the workspace. Type-only imports and re-exports, from a `.d.ts` there,
 * of `libs/contracts/src` only; anything else still leaves its package.
 */
function typesForTheConsole(file, root, node, target) {
  const kind = node.importKind ?? node.exportKind;
  return (
    kind === 'type' &&
    dirname(file) === join(root, 'console', 'public') &&
    file.endsWith('.d.ts') &&
    target.startsWith(join(root, 'libs', 'contracts', 'src') + sep)
  );
}

/**
 * The registry's rooms (folders of services/registry/src), cut by what each owns, and the rooms
 * each may import (its own always). Files at the top of src/ and the transports (`http/`,
 * `nats/`) are the top floor: they may import any room, and no room imports them.
 */
export const REGISTRY_ROOMS = {
  shared: [],
  accounts: ['shared'],
  events: ['shared'],
  audit: ['shared'],
  catalog: ['shared', 'events', 'audit'],
  review: ['shared', 'events', 'audit', 'catalog'],
  discovery: ['shared', 'events', 'audit', 'catalog', 'review'],
  credentials: ['shared', 'events', 'audit', 'catalog', 'discovery'],
  builtins: ['shared', 'events', 'audit', 'catalog', 'discovery', 'credentials'],
  agents: ['shared', 'accounts', 'events', 'audit', 'catalog', 'builtins'],
  signers: ['shared', 'accounts', 'audit', 'agents'],
  activity: ['shared', 'agents'],
  'sign-ins': ['shared', 'audit'],
  servers: [
    'shared',
    'accounts',
    'events',
    'audit',
    'catalog',
    'review',
    'discovery',
    'credentials',
    'builtins',
    'agents',
  ],
  actions: ['shared', 'accounts', 'audit', 'review', 'agents', 'signers', 'activity', 'sign-ins', 'servers'],
};

/** The registry's top floor: the transports; the files directly in src/ are on it too. */
export const REGISTRY_TOP = ['http', 'nats'];

const REGISTRY_SRC = join('services', 'registry', 'src');

/** The room of a file of the registry's sources: its first folder under src/, or '' for a file directly in src/. */
function roomOf(file, root) {
  const parts = relative(join(root, REGISTRY_SRC), file).split(sep);
  return parts.length > 1 ? parts[0] : '';
}

/** Whether a relative import from `file` (in the registry) to `target` keeps the room table; the problem to report if not. */
function roomProblem(file, target, root) {
  const src = join(root, REGISTRY_SRC) + sep;
  if (!file.startsWith(src) || !target.startsWith(src)) return undefined;
  const from = roomOf(file, root);
  const to = roomOf(target, root);
  if (from === to || from === '' || REGISTRY_TOP.includes(from)) return undefined;
  const allowed = REGISTRY_ROOMS[from];
  if (allowed === undefined) return { messageId: 'unknownRoom', data: { from } };
  if (to === '' || REGISTRY_TOP.includes(to))
    return { messageId: 'upward', data: { from, to: to === '' ? relative(src, target) : `${to}/` } };
  if (allowed.includes(to)) return undefined;
  return {
    messageId: 'room',
    data: { from, to, allowed: allowed.length === 0 ? 'no other room' : allowed.join(', ') },
  };
}

const packageCache = new Map();

/** The workspace package a file belongs to: its nearest package.json below the root, or undefined. */
function packageOf(file, root) {
  let dir = dirname(file);
  while (dir.startsWith(root) && dir !== root) {
    if (packageCache.has(dir)) return packageCache.get(dir);
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      const name = JSON.parse(readFileSync(manifest, 'utf8')).name;
      const found = { name, dir };
      packageCache.set(dir, found);
      return found;
    }
    dir = dirname(dir);
  }
  return undefined;
}

/** A test beside its code (`*.test.ts`, `src/test/…`) may use the shared test servers and support. */
function isTestFile(file) {
  return /\.test\.[cm]?[jt]s$/.test(file) || file.split(sep).includes('test');
}

/** `@mcpx/config/trusted-proxies` → `@mcpx/config`. */
function packageName(spec) {
  const [scope, name] = spec.split('/');
  return `${scope}/${name}`;
}

export const floorsRule = {
  meta: {
    type: 'problem',
    docs: {
      description:
        'A package imports only the workspace packages its floor allows, and a relative import stays in its package.',
    },
    schema: [],
    messages: {
      floor: '{{from}} may not import {{to}}: {{from}} stands on {{allowed}} (eslint/layering.js)',
      unknown: '{{from}} is not on a floor of eslint/layering.js: give it one',
      leaves: 'a relative import must stay in {{from}}: "{{spec}}" leaves it (import the other package by its name)',
      room: "the registry's room {{from}}/ may not import {{to}}/: {{from}}/ stands on {{allowed}} (REGISTRY_ROOMS, eslint/layering.js)",
      upward:
        "the registry's room {{from}}/ may not import {{to}}: that is the top floor, which stands on the rooms (eslint/layering.js)",
      unknownRoom:
        'services/registry/src/{{from}}/ is not a room of REGISTRY_ROOMS (eslint/layering.js): give it a floor',
    },
  },
  create(context) {
    const file = context.filename;
    const root = context.cwd;
    const pkg = packageOf(file, root);
    if (
      pkg === undefined ||
      !(
        relative(root, pkg.dir).startsWith('libs') ||
        relative(root, pkg.dir).startsWith('services') ||
        ['cli', 'console'].includes(relative(root, pkg.dir))
      )
    )
      return {};
    const test = isTestFile(file);
    const check = (node, spec, declaration) => {
      if (typeof spec !== 'string') return;
      if (spec.startsWith('@mcpx/')) {
        const to = packageName(spec);
        if (to === pkg.name) return;
        const allowed = ALLOWED[pkg.name];
        if (allowed === undefined) {
          context.report({ node, messageId: 'unknown', data: { from: pkg.name } });
          return;
        }
        if (!allowed.includes(to))
          context.report({
            node,
            messageId: 'floor',
            data: {
              from: pkg.name,
              to,
              allowed: allowed.length === 0 ? 'nothing of the workspace' : allowed.join(', '),
            },
          });
        return;
      }
      if (!spec.startsWith('.')) return;
      const target = resolve(dirname(file), spec);
      if (target === pkg.dir || target.startsWith(pkg.dir + sep)) {
        const problem = roomProblem(file, target, root);
        if (problem !== undefined) context.report({ node, ...problem });
        return;
      }
      if (test && target.startsWith(join(root, 'test') + sep)) return;
      if (declaration !== undefined && typesForTheConsole(file, root, declaration, target)) return;
      context.report({ node, messageId: 'leaves', data: { from: pkg.name, spec } });
    };
    return {
      ImportDeclaration: (node) => check(node.source, node.source.value, node),
      ExportNamedDeclaration: (node) => node.source && check(node.source, node.source.value, node),
      ExportAllDeclaration: (node) => check(node.source, node.source.value, node),
      ImportExpression: (node) => node.source.type === 'Literal' && check(node.source, node.source.value),
    };
  },
};

export default { rules: { floors: floorsRule } };
