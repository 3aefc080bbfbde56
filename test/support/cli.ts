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

/** Runs a command from the repository root as an operator would, bounded at 60 s. */
export function runCommand(command: string, args: string[], env: Record<string, string>): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? 1, stdout, stderr });
    });
  });
}

/**
 * Runs `mcpx` as a user does, in its own process: node itself with tsx as a loader (not the tsx
 * wrapper, which would start a second node for every command and outlive a kill).
 */
export function runCli(args: string[], env: Record<string, string>): Promise<CliResult> {
  return runCommand(process.execPath, [...entryArgs('mcpx'), ...args], env);
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
