/**
 * The modern task server (`tasks-upstream.ts`: SDK v2, the 2026-07-28 tasks extension) in a
 * process of its own, as the README's tasks walkthrough starts it and as `pnpm bench tasks` runs it
 * (out of the bench's process, whose event loop drives the callers):
 *
 *   node_modules/.bin/tsx test/servers/tasks-upstream-main.ts --port 3003 [--duration-ms 180000] [--poll-ms 500]
 *
 * It prints `{"url": …, "port": …}` on stdout once listening, as the other tour servers do. Forked with an IPC channel (the bench), it
 * sends `{url}` once listening and answers `{op: 'gets', from, to, minGapMs}` (the `tasks/get`s it
 * saw per task: the closest two of one task, how many were closer than `minGapMs` (and of those, how
 * many ended in `[from, to)`), how many fell in `[from, to)`) and `{op: 'ends'}` (when each task, by format, was done upstream).
 */
import { startTasksUpstream } from './tasks-upstream.js';

function arg(name: string): number | undefined {
  const at = process.argv.indexOf(`--${name}`);
  if (at === -1) return undefined;
  const n = Number(process.argv[at + 1]);
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a whole number, got ${process.argv[at + 1]}`);
  return n;
}

const gets = new Map<string, number[]>();
const ends = new Map<string, number>();
const counting = process.send !== undefined;
const durationMs = arg('duration-ms');
const pollIntervalMs = arg('poll-ms');
const ttlMs = arg('ttl-ms');
const port = arg('port');
const upstream = await startTasksUpstream({
  ...(durationMs !== undefined ? { durationMs } : {}),
  ...(pollIntervalMs !== undefined ? { pollIntervalMs } : {}),
  ...(ttlMs !== undefined ? { ttlMs } : {}),
  ...(port !== undefined ? { port } : {}),
  ...(counting
    ? {
        onGet: (id: string) => void (gets.get(id) ?? gets.set(id, []).get(id)!).push(Date.now()),
        onCreated: (t: { format: string; endsAt: number }) => void ends.set(t.format, t.endsAt),
      }
    : {}),
});

interface GetsQuery {
  op: 'gets';
  from: number;
  to: number;
  minGapMs: number;
}

function report(q: GetsQuery): {
  tasks: number;
  closest: number | null;
  tooClose: number;
  tooCloseInWindow: number;
  inWindow: number;
} {
  let closest = Number.POSITIVE_INFINITY;
  let tooClose = 0;
  let tooCloseInWindow = 0;
  let inWindow = 0;
  for (const times of gets.values()) {
    for (let i = 1; i < times.length; i++) {
      const gap = times[i]! - times[i - 1]!;
      closest = Math.min(closest, gap);
      if (gap >= q.minGapMs) continue;
      tooClose++;
      if (times[i]! >= q.from && times[i]! < q.to) tooCloseInWindow++;
    }
    for (const t of times) if (t >= q.from && t < q.to) inWindow++;
  }
  return { tasks: gets.size, closest: Number.isFinite(closest) ? closest : null, tooClose, tooCloseInWindow, inWindow };
}

if (counting) {
  process.on('message', (m: GetsQuery | { op: 'ends' }) => {
    if (m.op === 'gets') process.send!({ gets: report(m) });
    else process.send!({ ends: [...ends] });
  });
  process.on('disconnect', () => void upstream.close().then(() => process.exit(0)));
  process.send!({ url: upstream.url });
} else {
  process.stdout.write(`${JSON.stringify({ url: upstream.url, port: Number(new URL(upstream.url).port) })}\n`);
  const stop = (): void => void upstream.close().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
