/**
 * `pnpm bench call-log`: what recording a call in the call log (docs/activity.md) costs the proxy's
 * process, measured alone: the proxy's own `ActivityRecorder` and `PostgresActivityStore` writing
 * to a real Postgres (a database of its own, dropped at the end), in this one process.
 *
 * Each round makes 20,000 synthetic calls (a decoded request, and about 6 KB of short-lived
 * objects standing in for the rest of a call's work, so the collector sees calls, not a bare loop)
 * in ten batches of 2,000; one side records each call and writes each batch, the other only makes
 * the calls. Both sides run in turns, the order alternating, after two warm-up turns; the figure is
 * the median of each side's CPU per call (`process.cpuUsage`, user + system: the driver's socket
 * writes count) and their difference, the recorder's cost per call.
 *
 * Why apart from `pnpm bench proxy`: there, two proxies side by side share two cores with
 * Postgres, NATS, the upstream and the callers, and their turns differ by ±10 % from one to the
 * next; a cost of a few microseconds a call is below what that comparison can see. Here it is read
 * to a tenth of a microsecond. Postgres's own cost of the inserts is not in it (see the proxy
 * bench's Postgres column).
 *
 * `BENCH_BASELINE_ROOT=<checkout>`: that checkout's recorder and store as a third side, in the same
 * turns, on the same database.
 */
import { availableParallelism, totalmem } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createDb, migrate } from '../libs/db/src/index.js';
import { setupTelemetry } from '../libs/telemetry/src/index.js';
import { ActivityRecorder } from '../services/proxy/src/activity-recorder.js';
import { PostgresActivityStore } from '../services/proxy/src/activity-store.js';
import { createTestDatabase } from '../test/support/env.js';

const ROUNDS = Number(process.env.CALL_LOG_ROUNDS ?? 8);
const BATCHES = 10;
const BATCH = 2_000;

const tdb = await createTestDatabase();
const db = createDb(tdb.url, { max: 2 });
try {
  await migrate(db, 'activity');
  // The proxy's own telemetry (its metrics as it has them, no exporter): the recorder counts each batch.
  const telemetry = await setupTelemetry({ serviceName: 'bench-call-log' });
  // Flushed by the bench after each batch; the timer is never what writes.
  const recorderOf = (R: typeof ActivityRecorder, S: typeof PostgresActivityStore): ActivityRecorder =>
    new R({ store: new S(db), meter: telemetry.meter, buffer: 20_000, flushMs: 3_600_000, batch: BATCH }).start();
  const recorder = recorderOf(ActivityRecorder, PostgresActivityStore);
  const baselineRoot = process.env.BENCH_BASELINE_ROOT;
  const baseline =
    baselineRoot === undefined
      ? undefined
      : recorderOf(
          (
            (await import(pathToFileURL(join(baselineRoot, 'services/proxy/src/activity-recorder.ts')).href)) as {
              ActivityRecorder: typeof ActivityRecorder;
            }
          ).ActivityRecorder,
          (
            (await import(pathToFileURL(join(baselineRoot, 'services/proxy/src/activity-store.ts')).href)) as {
              PostgresActivityStore: typeof PostgresActivityStore;
            }
          ).PostgresActivityStore,
        );
  const target = { server: 'srv_bench', era: 'modern' } as const;
  let n = 0;
  let kept: unknown[] = [];

  /** One turn of one side (a recorder, or none): CPU µs per call. */
  const turn = async (rec: ActivityRecorder | undefined): Promise<number> => {
    const record = rec !== undefined;
    const before = process.cpuUsage();
    for (let b = 0; b < BATCHES; b++) {
      for (let i = 0; i < BATCH; i++) {
        const req = JSON.parse(
          `{"account":"acct_0123456789abcdef","agent":"agent_0123456789","run":"run-${n >> 6}","callId":"call-${n++}-0123456789abcdef","tool":"bench__echo","arguments":{"text":"m${n}"}}`,
        ) as Parameters<ActivityRecorder['record']>[0];
        const work: unknown[] = [];
        for (let j = 0; j < 60; j++) work.push({ j, s: `x${j}`, a: [j] });
        kept.push(work);
        if (kept.length > 64) kept = [];
        if (record) rec.record(req, target, n % 20 === 0 ? 'server_error' : 'ok', 1.2);
      }
      if (record) await rec.flush();
      else await new Promise((r) => setImmediate(r));
    }
    const used = process.cpuUsage(before);
    return (used.user + used.system) / (BATCHES * BATCH);
  };

  const sides = [recorder, undefined, ...(baseline ? [baseline] : [])];
  const cpu: number[][] = sides.map(() => []);
  for (let w = 0; w < 2; w++) for (const side of sides) await turn(side);
  for (let r = 0; r < ROUNDS; r++) {
    const order = sides.map((_, i) => i);
    if (r % 2 === 1) order.reverse();
    for (const i of order) cpu[i]!.push(await turn(sides[i]));
  }
  await recorder.stop();
  await baseline?.stop();
  const [on, off] = [cpu[0]!, cpu[1]!];
  const median = (xs: number[]): number => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length % 2 === 0 ? (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2 : s[s.length >> 1]!;
  };
  const pairs = on.map((x, i) => x - off[i]!);
  const spread = (xs: number[]): string => {
    const s = [...xs].sort((a, b) => a - b);
    return `${s[Math.floor(s.length / 4)]!.toFixed(2)} to ${s[Math.floor((3 * s.length) / 4)]!.toFixed(2)}`;
  };
  console.log(
    `machine: ${availableParallelism()} cores, ${(totalmem() / 2 ** 30).toFixed(1)} GiB, node ${process.version}, ${new Date().toISOString()}`,
  );
  console.log(`| side | CPU µs per call, each turn | median |`);
  console.log(`|---|---|---:|`);
  console.log(`| recorded and written | ${on.map((x) => x.toFixed(2)).join(' ')} | ${median(on).toFixed(2)} |`);
  console.log(`| not recorded | ${off.map((x) => x.toFixed(2)).join(' ')} | ${median(off).toFixed(2)} |`);
  if (baseline !== undefined)
    console.log(
      `| baseline's recorder | ${cpu[2]!.map((x) => x.toFixed(2)).join(' ')} | ${median(cpu[2]!).toFixed(2)} |`,
    );
  console.log(
    `call log: the recorder costs ${median(pairs).toFixed(2)} µs of CPU per call (median of ${ROUNDS} paired turns; middle half ${spread(pairs)}), ${recorder.stats.recorded} calls written; against the proxy's CPU per call of pnpm bench proxy, goal ≤ 2 %`,
  );
  if (baseline !== undefined) {
    const base = cpu[2]!.map((x, i) => x - off[i]!);
    console.log(
      `baseline's recorder: ${median(base).toFixed(2)} µs of CPU per call (middle half ${spread(base)}); this code / baseline = ${(median(pairs) / median(base)).toFixed(3)}×`,
    );
  }
} finally {
  await db.destroy();
  await tdb.drop().catch(() => undefined);
}
