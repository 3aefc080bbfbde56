/**
 * The floor of the proxy's NATS hop, for `pnpm bench proxy`: a responder on the proxy's call
 * subject (under a namespace of its own) that decodes each request as strictly as the proxy does
 * and answers at once with a reply of the proxy's shape, in a process of its own as the proxy is;
 * and the runtime's own ProxyClient to call it. No upstream, no proxy: what the hop itself costs.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { connect, type Msg, type NatsConnection } from '@nats-io/transport-node';
import { decodeStrict, encodePayload, makeSubjects } from '@mcpx/contracts';
import { ProxyClient } from '@mcpx/proxy-client';
import { entryArgs } from './bundles.js';
import { processCpuMs } from './proc-cpu.js';
import { serviceUrls } from './env.js';
import { ROOT } from './system.js';

/** The echo responder's namespace: its call subject is the proxy's, under this prefix. */
const ECHO_PREFIX = 'benchecho.';
const ECHO_INSTANCE = 'echo';

async function serveEcho(url: string): Promise<void> {
  const nc = await connect({ servers: url });
  const subjects = makeSubjects(ECHO_PREFIX);
  const callback = (err: Error | null, msg: Msg): void => {
    if (err) return;
    const req = decodeStrict<{ tool: string; arguments: { text?: unknown } }>(msg.data, 'request');
    const text = typeof req.arguments.text === 'string' ? req.arguments.text : '';
    msg.respond(
      encodePayload({
        ok: true,
        instance: ECHO_INSTANCE,
        result: { tool: req.tool, server: 'echo', summary: 'echo', text, durationMs: 0 },
      }),
    );
  };
  // The group subject and the instance's own, as a proxy instance: the client's later calls of a run go to the second.
  nc.subscribe(subjects.proxyCall, { callback });
  nc.subscribe(subjects.proxyInstanceCall(ECHO_INSTANCE), { callback });
  await nc.flush();
  process.stdout.write('ready\n');
  await nc.closed();
}

export interface NatsEcho {
  /** The runtime's ProxyClient, aimed at the echo responder. */
  client: ProxyClient;
  /** The same request as a plain nats.js request (encoded, sent, the reply decoded): what the ProxyClient adds shows against it. */
  plain(args: Record<string, unknown>): Promise<unknown>;
  /** The responder process's CPU time so far (ms; 0 where /proc is missing). */
  cpuMs(): number;
  stop(): Promise<void>;
}

/** Starts the responder in a process of its own and a client connection to it. */
export async function startNatsEcho(): Promise<NatsEcho> {
  const url = serviceUrls().nats;
  // Its bundle when the run built one (./bundles.ts), as the proxy it is the floor of runs.
  const child = spawn(process.execPath, [...entryArgs('nats-echo'), url], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stderr: string[] = [];
  child.stderr.on('data', (d: Buffer) => stderr.push(d.toString()));
  await new Promise<void>((resolve, reject) => {
    child.stdout.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`NATS echo exited ${code}: ${stderr.join('')}`)));
  });
  // As the runtime connects (connectRuntime): no stack traces captured per request.
  const nc: NatsConnection = await connect({ servers: url, noAsyncTraces: true });
  const subject = makeSubjects(ECHO_PREFIX).proxyCall;
  let seq = 0;
  return {
    client: new ProxyClient(nc, makeSubjects(ECHO_PREFIX)),
    plain: async (args) => {
      const req = { account: 'a', agent: 'echo', run: 'echo-run', tool: 'echo', arguments: args, callId: `c${++seq}` };
      return decodeStrict((await nc.request(subject, encodePayload(req), { timeout: 10_000 })).data, 'reply');
    },
    cpuMs: () => processCpuMs(child.pid),
    stop: async () => {
      await nc.close().catch(() => undefined);
      child.kill('SIGTERM');
    },
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  serveEcho(process.argv[2] ?? serviceUrls().nats).catch((err: unknown) => {
    process.stderr.write(`NATS echo failed: ${String(err)}\n`);
    process.exit(1);
  });
}
