import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../servers/index.js';
import { BUNDLE_ENTRIES } from '../support/bundles.js';
import { spawnService, stopProcess } from '../support/fixtures/service-process.js';
import { ROOT, eventually, systemEnv } from '../support/system.js';
import type { TestDatabase } from '../support/env.js';

const SERVICES = ['registry', 'projector', 'proxy', 'endpoint', 'authorization-server'];

/** Runs `node scripts/run.mjs build <out>` as the image's build does; its exit code and output. */
function runBuild(out: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['scripts/run.mjs', 'build', out], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (output += d.toString('utf8')));
    child.on('exit', (code) => resolve({ code, output }));
  });
}

/**
 * `npm run build`: what the image runs (Dockerfile: `node dist/<service>.mjs`). Each service comes
 * out as one file that runs on Node alone from any folder: the registry started from the build's
 * folder, away from the checkout, is healthy and serves the console's pages, which it finds by its
 * sources' location.
 */
describe('the build command', () => {
  const out = mkdtempSync(join(tmpdir(), 'mcpx-build-'));
  let db: TestDatabase | undefined;

  afterAll(async () => {
    await db?.drop().catch(() => undefined);
    rmSync(out, { recursive: true, force: true });
  });

  it("the tests start the services from the same entries the image's build bundles", async () => {
    const { SERVICE_ENTRIES } = (await import(pathToFileURL(join(ROOT, 'scripts', 'bundle.ts')).href)) as {
      SERVICE_ENTRIES: Record<string, string>;
    };
    for (const [name, entry] of Object.entries(SERVICE_ENTRIES))
      expect(BUNDLE_ENTRIES[name as keyof typeof BUNDLE_ENTRIES], name).toBe(entry);
  });

  it('bundles every service and the CLI, and a service runs from its bundle alone', async () => {
    const built = await runBuild(out);
    expect(built.code, built.output).toBe(0);
    for (const name of [...SERVICES, 'mcpx']) expect(existsSync(join(out, `${name}.mjs`)), name).toBe(true);
    // The image's entry names the files the build wrote.
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/scripts\/bundle\.ts dist\b/);
    expect(dockerfile).toMatch(/exec node \\"dist\/\$\{1:-\$\{SERVICE/);

    const sys = await systemEnv();
    db = sys.db;
    const port = await freePort();
    const { child, logs } = spawnService([join(out, 'registry.mjs')], {
      cwd: out,
      env: { PATH: process.env.PATH ?? '', ...sys.env },
      port,
      internalPort: await freePort(),
      instance: `registry-built-${port}`,
    });
    try {
      const base = `http://127.0.0.1:${port}`;
      await eventually(
        async () => {
          if (child.exitCode !== null) throw new Error(`the registry's bundle exited:\n${logs.join('')}`);
          return (await fetch(`${base}/healthz`).catch(() => undefined))?.ok === true ? true : undefined;
        },
        60_000,
        "the registry's bundle healthy",
      );
      const page = await fetch(`${base}/console/`);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('<!doctype html>');
    } finally {
      await stopProcess(child);
    }
  });
});
