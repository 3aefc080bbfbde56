import { mkdir, readFile, writeFile, chmod } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import {
  ErrorCodes,
  NatsFailures,
  WireError,
  natsFailure,
  type ActionRequest,
  type ActionResponse,
  type ActionType,
} from '@mcpx/contracts';
import { signAction, type KeyPair } from '@mcpx/envelope';
import { connectRuntime, type ProxyClient, type RuntimeConnection, type RuntimeCredentials } from '@mcpx/proxy-client';

export interface CliEnv {
  apiUrl: string;
  natsUrl: string;
  natsPrefix: string;
  keyFile: string;
  /**
   * Calls and run ends go over NATS instead of the API (`--nats URL` or MCPX_NATS_URL): for
   * operators holding the runtime's NATS credentials. A user never needs it.
   */
  viaNats: boolean;
  /** The NATS user of that mode (`--nats-user`/`--nats-password`, MCPX_NATS_USER/MCPX_NATS_PASSWORD, or a credentials file). */
  natsCredentials?: RuntimeCredentials;
}

/**
 * The NATS credentials of the operators' mode: flags win over the environment; a credentials file
 * (`--nats-credentials PATH` or MCPX_NATS_CREDENTIALS, the JSON `{user, password}` that `npm start`
 * writes) fills in when neither is given. Both a user and a password, or neither.
 */
export async function natsCredentialsFrom(given: {
  user?: string | undefined;
  pass?: string | undefined;
  file?: string | undefined;
}): Promise<RuntimeCredentials | undefined> {
  let { user, pass } = given;
  if (user === undefined && pass === undefined && given.file !== undefined) {
    let parsed: { user?: unknown; password?: unknown };
    try {
      parsed = JSON.parse(await readFile(given.file, 'utf8')) as { user?: unknown; password?: unknown };
    } catch {
      throw new Error(`cannot read NATS credentials from ${given.file} (a JSON file {"user", "password"})`);
    }
    if (typeof parsed.user !== 'string' || typeof parsed.password !== 'string')
      throw new Error(`${given.file} must hold {"user", "password"}`);
    ({ user, password: pass } = { user: parsed.user, password: parsed.password });
  }
  if ((user ?? '') === '' && (pass ?? '') === '') return undefined;
  if ((user ?? '') === '') throw new Error('a NATS password needs a NATS user (--nats-user or MCPX_NATS_USER)');
  if ((pass ?? '') === '') throw new Error('a NATS user needs a password (--nats-password or MCPX_NATS_PASSWORD)');
  return { user: user!, pass: pass! };
}

export async function readKey(keyFile: string): Promise<KeyPair> {
  let text: string;
  try {
    text = await readFile(keyFile, 'utf8');
  } catch {
    throw new Error(`no key at ${keyFile}: run \`mcpx keys new\` first (or set MCPX_KEY_FILE)`);
  }
  const key = JSON.parse(text) as Partial<KeyPair>;
  if (typeof key.principal !== 'string' || typeof key.seed !== 'string')
    throw new Error(`${keyFile} is not an mcpx key file`);
  return { principal: key.principal, seed: key.seed };
}

export async function writeKey(keyFile: string, key: KeyPair): Promise<void> {
  await mkdir(dirname(keyFile), { recursive: true, mode: 0o700 });
  await writeFile(keyFile, JSON.stringify(key, null, 2) + '\n', { mode: 0o600, flag: 'w' });
  await chmod(keyFile, 0o600);
}

/** Times an action refused for the signer's or the address's rate is sent again (after the wait it names). */
const RATE_RETRIES = 3;
/** The longest wait before such a retry: a longer one is the refusal the command reports. */
const RATE_RETRY_MAX_MS = 5_000;

/**
 * Signs and sends one action; returns its result or throws the typed error the API sent (act's
 * transport). `rate_limited` says nothing ran and when to come back: the command waits that long
 * and sends it again (a few times, a few seconds at most), as the console does, so a script of
 * commands beside an open console is not refused for their shared signer's burst.
 */
async function sendAction<T>(
  env: CliEnv,
  key: KeyPair,
  action: { type: string } & Record<string, unknown>,
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await sendOnce<T>(env, key, action);
    } catch (err) {
      const wait = err instanceof WireError && err.code === ErrorCodes.rateLimited ? retryAfterMs(err) : undefined;
      if (wait === undefined || wait > RATE_RETRY_MAX_MS || attempt >= RATE_RETRIES) throw err;
      await new Promise((r) => setTimeout(r, wait));
    }
  }
}

/** The wait a `rate_limited` refusal names (`details.retryAfterMs`), else a second. */
function retryAfterMs(err: WireError): number {
  const named = (err.details as { retryAfterMs?: unknown } | undefined)?.retryAfterMs;
  return typeof named === 'number' && Number.isFinite(named) && named >= 0 ? named : 1_000;
}

async function sendOnce<T>(env: CliEnv, key: KeyPair, action: { type: string } & Record<string, unknown>): Promise<T> {
  // A fresh envelope each time: its nonce is single-use.
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
    throw new Error(`cannot reach the API at ${env.apiUrl}${cause ? ` (${cause})` : ''}: is it running? (npm start)`, {
      cause: err,
    });
  }
  const body = (await res.json().catch(() => ({}))) as { error?: unknown };
  if (!res.ok || body.error !== undefined)
    throw WireError.from(body.error ?? { code: 'internal', message: `HTTP ${res.status}` });
  return body as T;
}

/** One action of the action map: its request checked against the map, its response typed by it. */
export function act<A extends ActionType>(
  env: CliEnv,
  key: KeyPair,
  type: A,
  ...request: object extends ActionRequest<A> ? [request?: ActionRequest<A>] : [request: ActionRequest<A>]
): Promise<ActionResponse<A>> {
  return sendAction<ActionResponse<A>>(env, key, { ...request[0], type });
}

/** Runs `fn` with a NATS connection and a proxy client (the operators' mode); sticky instances persist per key file. */
export async function withProxy<T>(
  env: CliEnv,
  fn: (proxy: ProxyClient, nc: NatsConnection) => Promise<T>,
): Promise<T> {
  let conn: RuntimeConnection;
  try {
    conn = await connectRuntime({
      url: env.natsUrl,
      prefix: env.natsPrefix,
      name: 'mcpx cli',
      maxReconnectAttempts: 0,
      ...(env.natsCredentials ? { credentials: env.natsCredentials } : {}),
    });
  } catch (err) {
    if (natsFailure(err) === NatsFailures.refused) {
      throw new Error(
        `NATS at ${env.natsUrl} refused ${env.natsCredentials ? `the user ${env.natsCredentials.user}` : 'an anonymous connection'}: the NATS mode is for operators with the runtime's credentials (--nats-user/--nats-password); without --nats, calls go through the API`,
        { cause: err },
      );
    }
    throw new Error(`cannot reach NATS at ${env.natsUrl}: is it running? (npm start)`, { cause: err });
  }
  try {
    return await fn(conn.client, conn.nc);
  } finally {
    await conn.close();
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
