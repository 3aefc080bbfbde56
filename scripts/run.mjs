#!/usr/bin/env node
// The entry of the README's commands. It needs only Node.js 20+ and npm: it brings the pinned pnpm
// (through npx when it is not installed), installs the workspace when the lockfile is newer than
// node_modules, then runs `start`, `build`, `test`, `mcpx …`, `bench …` or `soak …`.
import { spawnSync, spawn } from 'node:child_process';
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { setInterval } from 'node:timers';
import { fileURLToPath } from 'node:url';

const PNPM_VERSION = '12.4.2';
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const [command, ...rest] = process.argv.slice(2);

function pnpmCommand() {
  const probe = spawnSync('pnpm', ['--version'], { encoding: 'utf8' });
  if (probe.status === 0 && probe.stdout.trim() === PNPM_VERSION) return ['pnpm', []];
  return ['npx', ['--yes', `pnpm@${PNPM_VERSION}`]];
}

// Written after a successful install; an install is due when the manifests are newer.
const stamp = join(root, 'node_modules', '.mcpx-installed');

function needsInstall() {
  if (!existsSync(stamp)) return true;
  const inputs = ['pnpm-lock.yaml', 'package.json', 'pnpm-workspace.yaml'].map((f) => statSync(join(root, f)).mtimeMs);
  return Math.max(...inputs) > statSync(stamp).mtimeMs;
}

if (needsInstall()) {
  const [bin, pre] = pnpmCommand();
  process.stderr.write(`installing dependencies with pnpm ${PNPM_VERSION}…\n`);
  // Install output goes to stderr so that `npm run mcpx -- … --json` keeps a clean stdout.
  const res = spawnSync(bin, [...pre, 'install', '--frozen-lockfile'], {
    cwd: root,
    stdio: ['ignore', 2, 2],
    env: { ...process.env, npm_config_yes: 'true' },
  });
  if (res.status !== 0) {
    process.stderr.write('dependency install failed\n');
    process.exit(res.status ?? 1);
  }
  writeFileSync(stamp, `${new Date().toISOString()}\n`);
}

const bin = (name) => join(root, 'node_modules', '.bin', name);
const targets = {
  start: [bin('tsx'), ['scripts/start.ts', ...rest]],
  build: [bin('tsx'), ['scripts/bundle.ts', ...rest]],
  test: [bin('vitest'), ['run', ...rest]],
  mcpx: [bin('tsx'), ['cli/src/main.ts', ...rest]],
  bench: [bin('tsx'), [`bench/${rest[0] ?? 'proxy'}.ts`, ...rest.slice(1)]],
  soak: [bin('tsx'), ['scripts/soak.ts', ...rest]],
  'rotate-secrets': [bin('tsx'), ['services/registry/src/rotate-secrets.ts', ...rest]],
  accounts: [bin('tsx'), ['services/registry/src/accounts-command.ts', ...rest]],
};
const target = targets[command];
if (target === undefined) {
  process.stderr.write(`usage: node scripts/run.mjs ${Object.keys(targets).join('|')} [args]\n`);
  process.exit(2);
}
const child = spawn(target[0], target[1], { cwd: root, stdio: 'inherit' });
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig));
// npm passes Ctrl-C on (the whole process group gets it) but not a SIGTERM sent to npm alone, as a
// process manager sends: when our parent is gone, stop the child as if we had been told to.
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) child.kill('SIGTERM');
}, 1_000).unref();
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
