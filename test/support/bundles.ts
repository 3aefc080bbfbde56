import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build, type Plugin } from 'esbuild';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * The services and the CLI as the tests start them: each entry bundled once per run (esbuild, all
 * its dependencies inside, the same sources), so a process starts in a fraction of a second
 * instead of loading a few hundred TypeScript modules through tsx (about 2 s of CPU a start,
 * which hundreds of starts per run on two cores turned into most of the suite's time).
 *
 * The global set-up builds them and names their folder in `MCPX_TEST_BUNDLES`; without it (a
 * file run on its own outside the set-up, or `MCPX_TEST_BUNDLES=off`) processes run the sources
 * through tsx, as `npm start` and `npm run mcpx` do.
 */
export const BUNDLE_ENTRIES = {
  registry: 'services/registry/src/main.ts',
  projector: 'services/projector/src/main.ts',
  proxy: 'services/proxy/src/main.ts',
  endpoint: 'services/endpoint/src/main.ts',
  'authorization-server': 'services/authorization-server/src/main.ts',
  mcpx: 'cli/src/main.ts',
  /** The conformance tool's client under test: started once per scenario. */
  'conformance-client': 'test/conformance/client-harness.ts',
} as const;

export type BundleName = keyof typeof BUNDLE_ENTRIES;

/**
 * A module that locates files beside itself (the console's static pages) keeps its own location
 * inside a bundle: its `import.meta.url` is written as the source file's URL.
 */
const ownLocation: Plugin = {
  name: 'own-location',
  setup(b) {
    b.onLoad({ filter: /console[\\/]src[\\/]index\.ts$/ }, (args) => ({
      contents: readFileSync(args.path, 'utf8').replaceAll(
        'import.meta.url',
        JSON.stringify(pathToFileURL(args.path).href),
      ),
      loader: 'ts',
    }));
  },
};

/** Bundles every entry into `outDir` (one `<name>.mjs` each). */
export async function buildBundles(outDir: string): Promise<void> {
  await Promise.all(
    Object.entries(BUNDLE_ENTRIES).map(([name, entry]) =>
      build({
        entryPoints: [join(ROOT, entry)],
        outfile: join(outDir, `${name}.mjs`),
        bundle: true,
        platform: 'node',
        format: 'esm',
        target: 'node20',
        logLevel: 'error',
        // Bundled CommonJS dependencies still `require` Node's own modules.
        banner: {
          js: "import { createRequire as __mcpxRequire } from 'node:module'; const require = __mcpxRequire(import.meta.url);",
        },
        plugins: [ownLocation],
      }),
    ),
  );
}

/**
 * The node arguments that start `name`: its bundle when the run built one, else (or with
 * `fromSources`) its sources through tsx (node itself with tsx as a loader, so a kill reaches the
 * very process).
 */
export function entryArgs(name: BundleName, opts: { fromSources?: boolean } = {}): string[] {
  const dir = process.env.MCPX_TEST_BUNDLES;
  if (opts.fromSources !== true && dir !== undefined && dir !== '' && dir !== 'off') {
    const bundle = join(dir, `${name}.mjs`);
    if (existsSync(bundle)) return [bundle];
  }
  return ['--import', 'tsx', join(ROOT, BUNDLE_ENTRIES[name])];
}
