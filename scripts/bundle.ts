// `npm run build [-- <outDir>] [name=entry …]`: each service and the CLI bundled into one file
// (`<outDir>/<name>.mjs`, default `dist/`), all of its dependencies inside, from the same sources.
// The image runs these (`node dist/<service>.mjs`), `npm start` builds and runs its own at each
// start, and the tests start theirs. The sources through tsx cost a process about 100 MiB more at
// rest (tsx's loader thread, its transforms and their source maps) and a second or two of CPU at
// every start (BENCHMARKS.md, "The services' form").
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build, type Plugin } from 'esbuild';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The processes of the system, by the name their bundle takes. */
export const SERVICE_ENTRIES: Readonly<Record<string, string>> = {
  registry: 'services/registry/src/main.ts',
  projector: 'services/projector/src/main.ts',
  proxy: 'services/proxy/src/main.ts',
  endpoint: 'services/endpoint/src/main.ts',
  'authorization-server': 'services/authorization-server/src/main.ts',
  mcpx: 'cli/src/main.ts',
};

/**
 * A module of the workspace that locates files beside itself (the console's static pages, a test
 * support's root) keeps its own location inside a bundle: its `import.meta.url` is written as the
 * source file's URL. The entry keeps the bundle's own (a script that runs itself compares it with
 * `process.argv[1]`); dependencies under node_modules are left as they are.
 */
function ownLocation(entry: string): Plugin {
  return {
    name: 'own-location',
    setup(b) {
      b.onLoad({ filter: /\.ts$/ }, (args) => {
        if (args.path === entry || args.path.includes(`${sep}node_modules${sep}`)) return undefined;
        const source = readFileSync(args.path, 'utf8');
        if (!source.includes('import.meta.url')) return undefined;
        return {
          contents: source.replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href)),
          loader: 'ts',
        };
      });
    },
  };
}

/**
 * Bundles each entry (a path from `root`) into `outDir/<name>.mjs`. `root`: the checkout whose
 * sources are bundled (another checkout's, for a bench's baseline beside this code).
 */
export async function bundle(
  outDir: string,
  entries: Readonly<Record<string, string>> = SERVICE_ENTRIES,
  root: string = ROOT,
): Promise<void> {
  await Promise.all(
    Object.entries(entries).map(([name, entry]) =>
      build({
        entryPoints: [join(root, entry)],
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
        plugins: [ownLocation(join(root, entry))],
      }),
    ),
  );
}

const invoked = process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (invoked) {
  const args = process.argv.slice(2);
  const given = args.filter((a) => !a.includes('='));
  const extra = Object.fromEntries(args.filter((a) => a.includes('=')).map((a) => a.split('=', 2) as [string, string]));
  const out = given[0] === undefined ? join(ROOT, 'dist') : isAbsolute(given[0]) ? given[0] : resolve(given[0]);
  bundle(out, { ...SERVICE_ENTRIES, ...extra }).then(
    () => process.stdout.write(`bundled ${Object.keys({ ...SERVICE_ENTRIES, ...extra }).join(', ')} into ${out}\n`),
    (err: unknown) => {
      process.stderr.write(`bundle failed: ${(err as Error).message}\n`);
      process.exit(1);
    },
  );
}
