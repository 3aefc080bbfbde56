import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from './free-port.js';

export interface EverythingServer {
  /** `http://127.0.0.1:PORT/mcp` (streamableHttp) or `http://127.0.0.1:PORT/sse` (sse). */
  url: string;
  port: number;
  /** Kill the child and wait for it to exit. */
  close(): Promise<void>;
}

/**
 * A bound, not an expectation: alone it listens in about a second; beside three other files on a
 * loaded 2-core box it printed nothing in 15 s, and test/proxy/results.test.ts failed its set-up.
 * A server that exits before listening is still told at once.
 */
const READY_TIMEOUT_MS = 60_000;
const EXIT_TIMEOUT_MS = 5_000;

/** Path of `@modelcontextprotocol/server-everything`'s entry point. */
export function everythingServerEntry(): string {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve('@modelcontextprotocol/server-everything/package.json')), 'dist', 'index.js');
}

/** What the server prints on stderr once it listens (streamableHttp, then sse). */
const LISTENING = /(?:listening on|running on) port (\d+)/i;

/**
 * Spawns the reference "everything" MCP server on a free port and waits (bounded) until it says
 * it listens on that port. Its own line, not a TCP accept: another process that took the port
 * between `freePort` and the bind would accept while this server exits on EADDRINUSE. A server
 * that exits before listening is started again on another port (three tries).
 */
export async function startEverythingServer(transport: 'streamableHttp' | 'sse'): Promise<EverythingServer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(transport, await freePort());
    } catch (err) {
      if (!(err instanceof ExitedEarly) || attempt >= 3) throw err;
    }
  }
}

/** Starts server-everything on a given port (a restart on the port a stopped one had). */
export async function startEverythingServerAt(
  transport: 'streamableHttp' | 'sse',
  port: number,
): Promise<EverythingServer> {
  return await startOnce(transport, port);
}

class ExitedEarly extends Error {}

async function startOnce(transport: 'streamableHttp' | 'sse', port: number): Promise<EverythingServer> {
  const child = spawn(process.execPath, [everythingServerEntry(), transport], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  let listening = false;
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-4_000);
    if (LISTENING.exec(stderr)?.[1] === String(port)) listening = true;
  });
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });

  async function close(): Promise<void> {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), EXIT_TIMEOUT_MS);
      await exited;
      clearTimeout(timer);
    }
  }

  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (!listening || !(await accepts(port))) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new ExitedEarly(
        `server-everything exited (${child.exitCode ?? child.signalCode}) before listening on port ${port}: ${stderr}`,
      );
    }
    if (Date.now() > deadline) {
      await close();
      throw new Error(`server-everything did not listen on port ${port} within ${READY_TIMEOUT_MS} ms: ${stderr}`);
    }
    await sleep(50);
  }
  const path = transport === 'sse' ? '/sse' : '/mcp';
  return { url: `http://127.0.0.1:${port}${path}`, port, close };
}

async function accepts(port: number): Promise<boolean> {
  return await new Promise<boolean>((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => {
      socket.destroy();
      resolve(false);
    });
  });
}
