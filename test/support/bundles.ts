import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * The services and the CLI as the tests start them: each entry bundled once per run, as the image
 * and `npm start` run them (scripts/bundle.ts: esbuild, all its dependencies inside), so a process starts in a fraction of a second
 * instead of loading a few hundred TypeScript modules through tsx (about 2 s of CPU a start,
 * which hundreds of starts per run on two cores turned into most of the suite's time).
 *
 * The global set-up builds them and names their folder in `MCPX_TEST_BUNDLES`; without it (a
 * file run on its own outside the set-up, or `MCPX_TEST_BUNDLES=off`) processes run the sources
 * through tsx, as `npm run mcpx` does.
 */
// The services' and the CLI's entries are scripts/bundle.ts's `SERVICE_ENTRIES` (the image's build);
// test/ops/build-command.test.ts holds the two tables to each other.
export const BUNDLE_ENTRIES = {
  registry: 'services/registry/src/main.ts',
  projector: 'services/projector/src/main.ts',
  proxy: 'services/proxy/src/main.ts',
  endpoint: 'services/endpoint/src/main.ts',
  'authorization-server': 'services/authorization-server/src/main.ts',
  mcpx: 'cli/src/main.ts',
  /** The conformance tool's client under test: started once per scenario. */
  'conformance-client': 'test/conformance/client-harness.ts',
  /** The benches' floor: the bare relay's two roles, and the NATS echo responder. */
  'bare-relay': 'test/support/bare-relay.ts',
  'nats-echo': 'test/support/nats-echo.ts',
} as const;

export type BundleName = keyof typeof BUNDLE_ENTRIES;

/** Bundles every entry into `outDir` (one `<name>.mjs` each), as `npm run build` does (scripts/bundle.ts). */
export async function buildBundles(outDir: string): Promise<void> {
  // scripts/ is not a project the tests' compile includes: loaded by its path, typed here.
  const bundler = (await import(pathToFileURL(join(ROOT, 'scripts', 'bundle.ts')).href)) as {
    bundle(outDir: string, entries: Readonly<Record<string, string>>): Promise<void>;
  };
  await bundler.bundle(outDir, BUNDLE_ENTRIES);
}

/**
 * The node arguments that start `name`: its bundle when the run built one, else (or with
 * `fromSources`) its sources through tsx (node itself with tsx as a loader, so a kill reaches the
 * very process). `root`: another checkout's (a bench's baseline): its bundle from the folder in
 * `MCPX_BASELINE_BUNDLES` when the bench built one, else its sources through tsx.
 */
export function entryArgs(name: BundleName, opts: { fromSources?: boolean; root?: string } = {}): string[] {
  if (opts.root !== undefined && opts.root !== ROOT) {
    const dir = process.env.MCPX_BASELINE_BUNDLES;
    const bundle = dir === undefined ? undefined : join(dir, `${name}.mjs`);
    return bundle !== undefined && existsSync(bundle)
      ? [bundle]
      : ['--import', 'tsx', join(opts.root, BUNDLE_ENTRIES[name])];
  }
  const dir = process.env.MCPX_TEST_BUNDLES;
  if (opts.fromSources !== true && dir !== undefined && dir !== '' && dir !== 'off') {
    const bundle = join(dir, `${name}.mjs`);
    if (existsSync(bundle)) return [bundle];
  }
  return ['--import', 'tsx', join(ROOT, BUNDLE_ENTRIES[name])];
}
