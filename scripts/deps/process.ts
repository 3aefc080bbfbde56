// Running commands, finding binaries, waiting for ports and reading log tails.
import { execFile } from 'node:child_process';
import { access, readFile } from 'node:fs/promises';
import { constants } from 'node:fs';
import { connect } from 'node:net';
import { delimiter, join } from 'node:path';
import type { Endpoint } from './types.js';

export function tcpReachable(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = connect({ host, port });
    const finish = (ok: boolean): void => {
      socket.destroy();
      done(ok);
    };
    socket.setTimeout(timeoutMs, () => finish(false));
    socket.once('connect', () => finish(true));
    socket.once('error', () => finish(false));
  });
}

/**
 * Polls until the endpoint accepts connections. `exited` reports why the server's process has
 * already ended (or undefined while it runs), so a crash fails fast instead of at the deadline.
 */
export async function waitForPort(e: Endpoint, timeoutMs: number, exited?: () => string | undefined): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await tcpReachable(e.host, e.port, 500)) return;
    const why = exited?.();
    if (why !== undefined) throw new Error(`${e.label} exited before it answered on ${e.host}:${e.port}: ${why}`);
    if (Date.now() > deadline)
      throw new Error(`${e.label} did not answer on ${e.host}:${e.port} within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  timeoutMs?: number;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

/** Runs a command to completion; never rejects: a failure to start is a non-zero `code`. */
export function run(file: string, args: string[], options: RunOptions = {}): Promise<CommandResult> {
  return new Promise((done) => {
    execFile(
      file,
      args,
      {
        timeout: options.timeoutMs ?? 60_000,
        env: options.env ?? process.env,
        cwd: options.cwd,
        maxBuffer: 16 * 1024 * 1024,
      },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === 'number' ? err.code : 1;
        done({ code, stdout: String(stdout), stderr: String(stderr) || (err && code !== 0 ? err.message : '') });
      },
    );
  });
}

/** Like `run`, but returns stdout and throws, naming `what` and the output's end, on a non-zero exit. */
export async function runOrThrow(what: string, file: string, args: string[], options?: RunOptions): Promise<string> {
  const r = await run(file, args, options);
  if (r.code !== 0) throw new Error(`${what} failed (exit ${r.code}): ${(r.stderr || r.stdout).trim().slice(-2_000)}`);
  return r.stdout;
}

export async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The first executable `name` in PATH, then in `extraDirs`. */
export async function findOnPath(name: string, extraDirs: string[] = []): Promise<string | undefined> {
  const dirs = [...(process.env.PATH ?? '').split(delimiter).filter(Boolean), ...extraDirs];
  for (const dir of dirs) {
    const candidate = join(dir, name);
    if (await isExecutable(candidate)) return candidate;
  }
  return undefined;
}

export function shellQuote(arg: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The last lines of a log file under a heading, for error messages; empty when there are none. */
export async function tail(file: string, lines = 20): Promise<string> {
  const text = await readFile(file, 'utf8').catch(() => '');
  const last = text.trimEnd().split('\n').slice(-lines).join('\n');
  return last ? `last lines of ${file}:\n${last}` : '';
}
