/**
 * The floor of the agent endpoint's architecture, for `pnpm bench endpoint`: a bare relay with the
 * endpoint's shape and nothing else. A `node:http` server (the endpoint's place) reads each POST,
 * decodes its JSON body and sends it over NATS request/reply to a responder in a process of its
 * own (the proxy's place), which POSTs it to the upstream with undici (keep-alive pool) and sends
 * back the status, the MCP headers and the body; the relay writes them out. No token, no tool
 * set, no validation, no limits, no spans, no result shaping: what a gateway of two processes and
 * a NATS hop costs at the least between the same client and upstream.
 *
 * Targets by path: `POST /<name>` goes to the upstream URL named `<name>` (`targets`). Other
 * methods are answered 405 (a 2025 client then has no GET stream, which a call does not need).
 * Run as a script: `bare-relay.ts relay|responder <nats url> <subject> [<targets json>]`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { connect } from '@nats-io/transport-node';
import { entryArgs } from './bundles.js';
import { serviceUrls } from './env.js';
import { ROOT } from './system.js';

/** Request headers the relay passes on, and response headers it passes back. */
const REQUEST_HEADERS = ['content-type', 'accept', 'mcp-protocol-version', 'mcp-method', 'mcp-name', 'mcp-session-id'];
const RESPONSE_HEADERS = ['content-type', 'mcp-session-id', 'mcp-protocol-version'];
const CONNECTIONS = 64;

/** What crosses NATS: the target's name, the headers, the decoded body; and back, the status, headers, body text. */
interface RelayRequest {
  t: string;
  h: Record<string, string>;
  b: unknown;
}
interface RelayReply {
  s: number;
  h: Record<string, string>;
  b: string;
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

async function serveRelay(natsUrl: string, subject: string): Promise<void> {
  const nc = await connect({ servers: natsUrl, noAsyncTraces: true });
  const http = createServer((req, res) => {
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST' }).end();
      return;
    }
    void (async () => {
      const body = JSON.parse((await readBody(req)).toString('utf8')) as unknown;
      const h: Record<string, string> = {};
      for (const name of REQUEST_HEADERS) {
        const v = req.headers[name];
        if (typeof v === 'string') h[name] = v;
      }
      const msg = await nc.request(
        subject,
        JSON.stringify({ t: (req.url ?? '/').slice(1), h, b: body } satisfies RelayRequest),
        { timeout: 30_000 },
      );
      const reply = JSON.parse(msg.string()) as RelayReply;
      res.writeHead(reply.s, reply.h).end(reply.b);
    })().catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(String(err));
    });
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${(http.address() as AddressInfo).port}` })}\n`);
  await nc.closed();
}

type UndiciPool = {
  request(opts: { method: string; path: string; headers: Record<string, string>; body: string }): Promise<{
    statusCode: number;
    headers: Record<string, string | string[] | undefined>;
    body: { text(): Promise<string> };
  }>;
};

async function serveResponder(natsUrl: string, subject: string, targets: Record<string, string>): Promise<void> {
  // undici as the outbound library declares it (the proxy's own HTTP client).
  const undiciPath = createRequire(join(ROOT, 'libs', 'outbound', 'package.json')).resolve('undici');
  const { Pool } = (await import(pathToFileURL(undiciPath).href)) as {
    Pool: new (origin: string, opts: { connections: number }) => UndiciPool;
  };
  const pools = new Map(
    Object.entries(targets).map(([name, url]) => [
      name,
      { pool: new Pool(new URL(url).origin, { connections: CONNECTIONS }), path: new URL(url).pathname },
    ]),
  );
  const nc = await connect({ servers: natsUrl, noAsyncTraces: true });
  nc.subscribe(subject, {
    queue: 'responders',
    callback: (err, msg) => {
      if (err) return;
      void (async () => {
        const req = JSON.parse(msg.string()) as RelayRequest;
        const target = pools.get(req.t);
        if (target === undefined) {
          msg.respond(JSON.stringify({ s: 404, h: {}, b: '' } satisfies RelayReply));
          return;
        }
        const res = await target.pool.request({
          method: 'POST',
          path: target.path,
          headers: req.h,
          body: JSON.stringify(req.b),
        });
        const h: Record<string, string> = {};
        for (const name of RESPONSE_HEADERS) {
          const v = res.headers[name];
          if (typeof v === 'string') h[name] = v;
        }
        msg.respond(JSON.stringify({ s: res.statusCode, h, b: await res.body.text() } satisfies RelayReply));
      })().catch((e: unknown) =>
        msg.respond(JSON.stringify({ s: 502, h: { 'content-type': 'text/plain' }, b: String(e) } satisfies RelayReply)),
      );
    },
  });
  await nc.flush();
  process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
  await nc.closed();
}

export interface BareRelay {
  /** `<relay>/<name>` for each target. */
  urlOf(name: string): string;
  relayPid: number | undefined;
  responderPid: number | undefined;
  stop(): void;
}

function spawnRole(
  args: string[],
  nodeArgs: string[],
): Promise<{ child: ChildProcess; first: Record<string, unknown> }> {
  // Its bundle when the run built one (./bundles.ts), as the services it is the floor of run.
  const child = spawn(process.execPath, [...nodeArgs, ...entryArgs('bare-relay'), ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stderr: string[] = [];
  child.stderr?.on('data', (d: Buffer) => stderr.push(d.toString()));
  return new Promise((resolve, reject) => {
    child.stdout?.once('data', (d: Buffer) =>
      resolve({ child, first: JSON.parse(d.toString()) as Record<string, unknown> }),
    );
    child.once('exit', (code) => reject(new Error(`bare relay ${args[0]} exited ${code}: ${stderr.join('')}`)));
  });
}

/**
 * Starts the relay and its responder, each in a process of its own, on the test NATS. `nodeArgs`
 * of a role are given to its `node` (the bench's `--cpu-prof` flags, to read its profile beside the
 * endpoint's and the proxy's).
 */
export async function startBareRelay(
  targets: Record<string, string>,
  nodeArgs: { relay?: string[]; responder?: string[] } = {},
): Promise<BareRelay> {
  const nats = serviceUrls().nats;
  const subject = `benchrelay.${Math.random().toString(36).slice(2, 10)}`;
  const responder = await spawnRole(['responder', nats, subject, JSON.stringify(targets)], nodeArgs.responder ?? []);
  const relay = await spawnRole(['relay', nats, subject], nodeArgs.relay ?? []);
  const base = relay.first.url as string;
  return {
    urlOf: (name) => `${base}/${name}`,
    relayPid: relay.child.pid,
    responderPid: responder.child.pid,
    stop: () => {
      relay.child.kill('SIGTERM');
      responder.child.kill('SIGTERM');
    },
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [role, natsUrl, subject, targets] = process.argv.slice(2);
  // An exit of its own on SIGTERM, so that a `--cpu-prof` profile is written.
  process.once('SIGTERM', () => process.exit(0));
  if (natsUrl === undefined || subject === undefined)
    throw new Error('bare-relay.ts relay|responder <nats url> <subject> [<targets json>]');
  if (role === 'relay') await serveRelay(natsUrl, subject);
  else if (role === 'responder')
    await serveResponder(natsUrl, subject, JSON.parse(targets ?? '{}') as Record<string, string>);
  else throw new Error(`role relay|responder, got ${role}`);
}
