import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ApiClient } from './api-client.js';
import { entryArgs } from './bundles.js';
import { ROOT } from './system.js';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** A command running in its own process: its output so far, and its exit code once it exits. */
export interface RunningCommand {
  readonly stdout: string;
  readonly stderr: string;
  /** The exit code (1 when killed by a signal). */
  exited: Promise<number>;
  /** Kills it now (SIGKILL) and drops its bound. */
  kill: () => void;
}

/** Starts a command from the repository root as an operator would, killed (SIGKILL) after `boundMs`. */
export function startCommand(
  command: string,
  args: string[],
  env: Record<string, string>,
  boundMs = 60_000,
): RunningCommand {
  const child = spawn(command, args, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (d: Buffer) => (out.stdout += d.toString('utf8')));
  child.stderr.on('data', (d: Buffer) => (out.stderr += d.toString('utf8')));
  const timer = setTimeout(() => child.kill('SIGKILL'), boundMs);
  const exited = new Promise<number>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve(code ?? 1);
    });
  });
  return {
    get stdout() {
      return out.stdout;
    },
    get stderr() {
      return out.stderr;
    },
    exited,
    kill: () => {
      clearTimeout(timer);
      child.kill('SIGKILL');
    },
  };
}

/** Runs a command from the repository root as an operator would, bounded at `boundMs` (60 s). */
export async function runCommand(
  command: string,
  args: string[],
  env: Record<string, string>,
  boundMs = 60_000,
): Promise<CliResult> {
  const running = startCommand(command, args, env, boundMs);
  const code = await running.exited;
  return { code, stdout: running.stdout, stderr: running.stderr };
}

/**
 * Runs `mcpx` as a user does, in its own process: node itself with tsx as a loader (not the tsx
 * wrapper, which would start a second node for every command and outlive a kill), killed after
 * `boundMs` (60 s).
 */
export function runCli(args: string[], env: Record<string, string>, boundMs = 60_000): Promise<CliResult> {
  return runCommand(process.execPath, [...entryArgs('mcpx'), ...args], env, boundMs);
}

/** `mcpx` started in its own process (see {@link runCli}), its output read as it comes. */
export function startCli(args: string[], env: Record<string, string>, boundMs = 60_000): RunningCommand {
  return startCommand(process.execPath, [...entryArgs('mcpx'), ...args], env, boundMs);
}

/**
 * The environment `mcpx` runs with as `api`'s account: its key in a key file (mode 0600) of a
 * fresh temporary directory, `MCPX_API_URL` the API it signs for, `extra` on top (e.g. NATS for
 * `mcpx call`). `dir` is that directory, for other files a test hands the CLI.
 */
export function cliEnvFor(
  api: ApiClient,
  extra: Record<string, string> = {},
): { env: Record<string, string>; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'mcpx-cli-'));
  const keyFile = join(dir, 'key.json');
  writeFileSync(keyFile, JSON.stringify(api.key), { mode: 0o600 });
  return { env: { MCPX_API_URL: api.apiUrl, MCPX_KEY_FILE: keyFile, ...extra }, dir };
}
