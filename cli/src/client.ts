import { mkdir, readFile, writeFile, chmod } from 'node:fs/promises';
import { dirname } from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { WireError, makeSubjects } from '@mcpx/contracts';
import { signAction, type KeyPair } from '@mcpx/envelope';
import { ProxyClient } from '@mcpx/proxy-client';

export interface CliEnv {
  apiUrl: string;
  natsUrl: string;
  natsPrefix: string;
  keyFile: string;
}

export async function readKey(keyFile: string): Promise<KeyPair> {
  let text: string;
  try {
    text = await readFile(keyFile, 'utf8');
  } catch {
    throw new Error(`no key at ${keyFile}: run \`mcpx keys new\` first (or set MCPX_KEY_FILE)`);
  }
  const key = JSON.parse(text) as Partial<KeyPair>;
  if (typeof key.principal !== 'string' || typeof key.seed !== 'string') throw new Error(`${keyFile} is not an mcpx key file`);
  return { principal: key.principal, seed: key.seed };
}

export async function writeKey(keyFile: string, key: KeyPair): Promise<void> {
  await mkdir(dirname(keyFile), { recursive: true, mode: 0o700 });
  await writeFile(keyFile, JSON.stringify(key, null, 2) + '\n', { mode: 0o600, flag: 'w' });
  await chmod(keyFile, 0o600);
}

/** Signs and sends one action; returns its result or throws the typed error the API sent. */
export async function sendAction<T>(env: CliEnv, key: KeyPair, action: { type: string } & Record<string, unknown>): Promise<T> {
  const envelope = signAction(key, key.principal, action);
  let res: Response;
  try {
    res = await fetch(new URL('/v1/actions', env.apiUrl), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(envelope),
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code;
    throw new Error(`cannot reach the API at ${env.apiUrl}${cause ? ` (${cause})` : ''}: is it running? (npm start)`, { cause: err });
  }
  const body = (await res.json().catch(() => ({}))) as { error?: unknown };
  if (!res.ok || body.error !== undefined) throw WireError.from(body.error ?? { code: 'internal', message: `HTTP ${res.status}` });
  return body as T;
}

/** Runs `fn` with a NATS connection and a proxy client; sticky instances persist per key file. */
export async function withProxy<T>(env: CliEnv, fn: (proxy: ProxyClient, nc: NatsConnection) => Promise<T>): Promise<T> {
  let nc: NatsConnection;
  try {
    nc = await connect({ servers: env.natsUrl, name: 'mcpx cli', maxReconnectAttempts: 0 });
  } catch (err) {
    throw new Error(`cannot reach NATS at ${env.natsUrl}: is it running? (npm start)`, { cause: err });
  }
  try {
    return await fn(new ProxyClient(nc, makeSubjects(env.natsPrefix)), nc);
  } finally {
    await nc.drain().catch(() => undefined);
  }
}

const runsFile = (env: CliEnv): string => `${env.keyFile}.runs.json`;

/** The instance each open run of this CLI is stuck to, so a run's calls keep one pool. */
export async function loadRuns(env: CliEnv): Promise<Record<string, string>> {
  try {
    return JSON.parse(await readFile(runsFile(env), 'utf8')) as Record<string, string>;
  } catch {
    return {};
  }
}

export async function saveRuns(env: CliEnv, runs: Record<string, string>): Promise<void> {
  await writeFile(runsFile(env), JSON.stringify(runs) + '\n', { mode: 0o600 });
}
