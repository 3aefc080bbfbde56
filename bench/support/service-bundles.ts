import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BUNDLE_ENTRIES, buildBundles } from '../../test/support/bundles.js';
import { ROOT } from '../../test/support/system.js';

/**
 * The form the benches run the services in: their bundles, as the image and `npm start` run them
 * (scripts/bundle.ts), built here from this checkout's sources and, with `BENCH_BASELINE_ROOT`,
 * from that checkout's by the same bundler, so both sides run in the same form.
 * `BENCH_FROM_SOURCES=1`: the sources through tsx instead (`BENCH_BASELINE_FROM_SOURCES=1`: the
 * baseline's only). The test support's spawns read the
 * folders from `MCPX_TEST_BUNDLES` and `MCPX_BASELINE_BUNDLES`. Returns the line a bench prints.
 */
export async function benchServiceForm(): Promise<string> {
  if (process.env.BENCH_FROM_SOURCES === '1') {
    process.env.MCPX_TEST_BUNDLES = 'off';
    delete process.env.MCPX_BASELINE_BUNDLES;
    return 'services: from their sources through tsx (BENCH_FROM_SOURCES=1)';
  }
  const own = bundleFolder('mcpx-bench-bundles-');
  await buildBundles(own);
  process.env.MCPX_TEST_BUNDLES = own;
  const baseline = process.env.BENCH_BASELINE_ROOT;
  // BENCH_BASELINE_FROM_SOURCES=1: the baseline through tsx (the two forms of the same code side by side).
  if (baseline !== undefined && process.env.BENCH_BASELINE_FROM_SOURCES !== '1') {
    const dir = bundleFolder('mcpx-bench-baseline-bundles-');
    const bundler = (await import(pathToFileURL(join(ROOT, 'scripts', 'bundle.ts')).href)) as {
      bundle(outDir: string, entries: Readonly<Record<string, string>>, root: string): Promise<void>;
    };
    const { proxy, endpoint, registry } = BUNDLE_ENTRIES;
    await bundler.bundle(dir, { proxy, endpoint, registry }, baseline);
    process.env.MCPX_BASELINE_BUNDLES = dir;
  }
  return 'services: from their bundles, as the image runs them (BENCH_FROM_SOURCES=1: through tsx)';
}

/** A folder for a run's bundles (some 30 MB), removed when the bench's process exits. */
function bundleFolder(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * Runs `start` with the services' spawns on their sources through tsx (a side by side of the two
 * forms); the form chosen before is back afterwards.
 */
export async function fromSources<T>(start: () => Promise<T>): Promise<T> {
  const before = process.env.MCPX_TEST_BUNDLES;
  process.env.MCPX_TEST_BUNDLES = 'off';
  try {
    return await start();
  } finally {
    if (before === undefined) delete process.env.MCPX_TEST_BUNDLES;
    else process.env.MCPX_TEST_BUNDLES = before;
  }
}
