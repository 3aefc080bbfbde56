/**
 * `pnpm bench subscriptions`: resource subscriptions through the agent endpoint (docs/endpoint.md#subscriptions)
 * versus the same SDK v2 client subscribing at the remote server directly, side by side in one run,
 * against one 2026-07-28 upstream (test/servers/subscribing-upstream.ts), everything in this
 * process on real NATS, Postgres and Redis:
 *
 * - listen open: a `subscriptions/listen` naming one resource, opened and closed one at a time
 *   (p50, p99; the first through the endpoint, which opens the proxy's connection, apart);
 * - update: one update of a subscribed resource until the client hears it (p50, p99; each round a
 *   resource of its own, so no coalescing window is in the way);
 * - fan-out: 20 clients of one resource, one update until all 20 heard it, and how many upstream
 *   listens carried them (1 through the endpoint);
 * - flood: 10,000 updates of one resource at once: how many reached the client, once settled.
 * `BENCH_ROUNDS` (default 60): the rounds of the first two.
 */
import {
  ModernClient as Client,
  ModernStreamableHTTPClientTransport as StreamableHTTPClientTransport,
} from '../test/support/sdk-client.js';
import { startSubscribingUpstream, type SubscribingUpstream } from '../test/servers/subscribing-upstream.js';
import { startEndpointSystem } from '../test/endpoint/endpoint-harness.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 60);
const FAN = 20;

function stats(ms: number[]): string {
  const s = [...ms].sort((a, b) => a - b);
  const at = (p: number): number => s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
  return `p50 ${at(50).toFixed(2)} ms, p99 ${at(99).toFixed(2)} ms (n=${s.length})`;
}

interface Heard {
  client: Client;
  wait(uri: string): Promise<void>;
  count(uri: string): number;
}

async function connect(url: string, token?: string): Promise<Heard> {
  const client = new Client({ name: 'bench-subs', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  const headers: Record<string, string> = token === undefined ? {} : { authorization: `Bearer ${token}` };
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  const counts = new Map<string, number>();
  const waiters = new Map<string, () => void>();
  client.setNotificationHandler('notifications/resources/updated', (n) => {
    counts.set(n.params.uri, (counts.get(n.params.uri) ?? 0) + 1);
    waiters.get(n.params.uri)?.();
  });
  return {
    client,
    count: (uri) => counts.get(uri) ?? 0,
    wait: (uri) =>
      new Promise<void>((resolve, reject) => {
        if ((counts.get(uri) ?? 0) > 0) return resolve();
        const timer = setTimeout(() => reject(new Error(`no update of ${uri}`)), 10_000);
        waiters.set(uri, () => {
          clearTimeout(timer);
          waiters.delete(uri);
          resolve();
        });
      }),
  };
}

async function leg(name: string, upstream: SubscribingUpstream, url: string, token?: string): Promise<void> {
  const one = await connect(url, token);
  const cold = performance.now();
  await (await one.client.listen({ resourceSubscriptions: ['test://watched/cold'] })).close();
  const coldMs = performance.now() - cold;
  const opens: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const t = performance.now();
    const sub = await one.client.listen({ resourceSubscriptions: [`test://watched/open-${i % 5}`] });
    opens.push(performance.now() - t);
    await sub.close();
  }
  const uris = Array.from({ length: ROUNDS }, (_, i) => `test://watched/u${i}`);
  const sub = await one.client.listen({ resourceSubscriptions: uris });
  const updates: number[] = [];
  for (const uri of uris) {
    const t = performance.now();
    const heard = one.wait(uri);
    upstream.update(uri);
    await heard;
    updates.push(performance.now() - t);
  }
  await sub.close();
  const fans = await Promise.all(Array.from({ length: FAN }, () => connect(url, token)));
  const listensBefore = upstream.listens();
  const fanSubs = await Promise.all(
    fans.map((c) => c.client.listen({ resourceSubscriptions: ['test://watched/fan'] })),
  );
  const listensFan = upstream.listens() - listensBefore;
  const t = performance.now();
  const all = Promise.all(fans.map((c) => c.wait('test://watched/fan')));
  upstream.update('test://watched/fan');
  await all;
  const fanMs = performance.now() - t;
  await Promise.all(fanSubs.map((s) => s.close()));
  await Promise.all(fans.map((c) => c.client.close()));
  const flood = await one.client.listen({ resourceSubscriptions: ['test://watched/flood'] });
  const floodStart = performance.now();
  upstream.update('test://watched/flood', 10_000);
  await one.wait('test://watched/flood');
  const firstMs = performance.now() - floodStart;
  // Settled: no more for a second (everything shares this process, so the proxy parses the flood
  // between the client's reads).
  for (let seen = -1; seen !== one.count('test://watched/flood');) {
    seen = one.count('test://watched/flood');
    await new Promise((r) => setTimeout(r, 1_000));
  }
  const flooded = one.count('test://watched/flood');
  await flood.close();
  await one.client.close();
  console.log(`${name}:`);
  console.log(`  listen open   cold ${coldMs.toFixed(1)} ms; warm ${stats(opens)}`);
  console.log(`  update heard  ${stats(updates)}`);
  console.log(
    `  fan-out       ${FAN} clients heard one update in ${fanMs.toFixed(1)} ms over ${listensFan} upstream listen(s)`,
  );
  console.log(
    `  flood         10,000 updates reached the client as ${flooded} (the first after ${firstMs.toFixed(0)} ms)`,
  );
}

async function main(): Promise<void> {
  const [sys, upstream] = await Promise.all([
    startEndpointSystem({ endpointEnv: { ENDPOINT_STREAMS_PER_TOKEN: '64' } }),
    startSubscribingUpstream(),
  ]);
  try {
    await sys.system.setServer('live', upstream.url);
    await sys.system.createAgent('bench', ['live'], 1);
    const { token } = await sys.token('bench');
    await leg('direct', upstream, upstream.url);
    await leg(
      'through the endpoint (per-server face)',
      upstream,
      `${sys.endpoint.url}/v1/agents/bench/servers/live/mcp`,
      token,
    );
  } finally {
    await sys.stop();
    await upstream.close();
  }
}

await main();
