// `npm start`: brings up NATS, Postgres and Redis (using what answers, else Docker, else local
// binaries), then every service in the local profile, and prints where the API is.
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureDependencies } from './deps/index.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const env = {
  ...process.env,
  DATABASE_URL: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/mcpx',
  NATS_URL: process.env.NATS_URL ?? 'nats://127.0.0.1:4222',
  REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
  // The local profile lets a developer connect servers on their own machine over plain http.
  OUTBOUND_PROFILE: process.env.OUTBOUND_PROFILE ?? 'local',
};
const PORTS = { registry: Number(process.env.REGISTRY_PORT ?? 8080), projector: Number(process.env.PROJECTOR_PORT ?? 8081), proxy: Number(process.env.PROXY_PORT ?? 8082) };

const log = (line: string): void => void process.stdout.write(`[start] ${line}\n`);
const children: ChildProcess[] = [];

function startService(name: keyof typeof PORTS): ChildProcess {
  const child = spawn(join(root, 'node_modules', '.bin', 'tsx'), [`services/${name}/src/main.ts`], {
    cwd: root,
    env: { ...env, HTTP_PORT: String(PORTS[name]), INSTANCE_ID: `${name}-local` },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const prefix = (chunk: Buffer): void => {
    for (const line of chunk.toString('utf8').split('\n')) if (line.trim() !== '') process.stdout.write(`[${name}] ${line}\n`);
  };
  child.stdout?.on('data', prefix);
  child.stderr?.on('data', prefix);
  child.on('exit', (code) => {
    if (!stopping) {
      log(`${name} exited (${code}); stopping everything`);
      void stop(1);
    }
  });
  children.push(child);
  return child;
}

async function waitHealthy(name: keyof typeof PORTS, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`http://127.0.0.1:${PORTS[name]}/healthz`);
      if (res.ok) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${name} did not become healthy within ${timeoutMs / 1000} s`);
}

let stopping = false;
let stopDeps: (() => Promise<void>) | undefined;
async function stop(code: number): Promise<never> {
  stopping = true;
  for (const c of children) c.kill('SIGTERM');
  await Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : c.once('exit', r)))));
  await stopDeps?.();
  process.exit(code);
}
process.on('SIGINT', () => void stop(0));
process.on('SIGTERM', () => void stop(0));

try {
  const deps = await ensureDependencies({ databaseUrl: env.DATABASE_URL, natsUrl: env.NATS_URL, redisUrl: env.REDIS_URL, dataDir: join(root, '.data'), log });
  stopDeps = () => deps.stop();
  // The registry and the projector migrate their own schemas; the proxy reads both, so it starts last.
  startService('registry');
  startService('projector');
  await Promise.all([waitHealthy('registry'), waitHealthy('projector')]);
  startService('proxy');
  await waitHealthy('proxy');
  log(`API ready at http://127.0.0.1:${PORTS.registry}  (NATS ${env.NATS_URL})`);
  log('try: npm run mcpx -- keys new   (the README has a five-minute tour); Ctrl-C stops everything');
} catch (err) {
  log(`failed: ${(err as Error).message}`);
  await stop(1);
}
