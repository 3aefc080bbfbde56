/**
 * The soak: mixed load on the whole stack as processes (one registry, one
 * projector, two proxies) against two upstreams (modern and legacy) in this process, for N
 * minutes:
 * - calls (five per run, runs ended), from four callers, each starting a run every 500 ms at most
 *   (about 40 calls/s and 8 EndRun/s when the box keeps up; a late run starts at once, with no
 *   catch-up burst): a steady load, the same on a fast box as on a slow one, and within the
 *   signer's action rate (20/s) with the other actions;
 * - discoveries: a server's tools change and it is refreshed;
 * - grants: an agent's grant is revoked and given back (UpdateAgent), its tools follow;
 * - approvals: a destructive tool's call stops for approval, is approved, and runs once.
 *
 * The first part of the run is warm-up (the stack's caches, pools and JIT; `warmupMs`, a sixth of
 * the run, at most a minute); the rest is cut into four windows. Reported: every unexpected
 * outcome (a line `N errors`), p99 per window and the drift of the last window against the first,
 * and each service's RSS (sampled every two seconds; the median of a window) from the first
 * window to the last. The bounds (`SOAK_BOUNDS`, stated in docs/operations.md): no error, no
 * service exits, every window answers calls, p99 drift within `maxP99Ratio` or `maxP99RiseMs`,
 * RSS growth within `maxGrowthMiB` per service. Used by test/ops/soak.test.ts (two minutes, in
 * `npm test`) and scripts/soak.ts (`pnpm soak --minutes N`).
 */
import { readFileSync } from 'node:fs';
import { WireError } from '@mcpx/contracts';
import { echoTool, startTestMcpServer, type TestTool } from '../../servers/index.js';
import { percentile, Stack } from './stack.js';

/**
 * The bounds a soak must keep. They must hold on a loaded two-core box (CI runs the soak beside
 * the rest of the suite): a drift fails only if p99 rises from each window to the next and the
 * last window's is both `maxP99Ratio` times the first's and `maxP99RiseMs` above it (load from
 * other work moves p99 by a factor of about two between windows, up or down; a queue that grows
 * moves it up, window after window, without bound).
 */
export const SOAK_BOUNDS = { maxGrowthMiB: 64, maxP99Ratio: 4, maxP99RiseMs: 2_000 } as const;

export interface SoakOptions {
  minutes: number;
  maxGrowthMiB?: number;
  maxP99Ratio?: number;
  maxP99RiseMs?: number;
  log?: (line: string) => void;
}

/**
 * A request whose socket was closed under it (see `resets` in {@link runSoak}): a call whose
 * upstream keep-alive socket the test server closed, or an action whose keep-alive socket to the
 * registry the registry closed (its 5 s keep-alive timer) as this process reused it. fetch says
 * only "fetch failed" and names the socket's fate in its cause (`UND_ERR_SOCKET other side closed`,
 * `ECONNRESET`); a refused connection (`ECONNREFUSED`: no service there) is an error.
 */
const SOCKET_CLOSED = /ECONNRESET|other side closed|socket hang up/;

/** How the soak counts a failed operation: a socket closed under it (bounded apart), or an error. */
export function failureOf(what: string, err: unknown): { kind: 'reset' | 'error'; text: string } {
  const text = `${what}: ${err instanceof WireError ? `${err.code} ${err.message}` : errorText(err)}`;
  return { kind: SOCKET_CLOSED.test(text) ? 'reset' : 'error', text };
}

export interface SoakReport {
  counts: { calls: number; runs: number; discoveries: number; grants: number; approvals: number };
  /** Unexpected outcomes (a call's error, a wrong answer, a service that exited, …). */
  errors: string[];
  /** p99 per window after warm-up (ms), and the calls each window answered. */
  windows: Array<{ p99: number; calls: number }>;
  windowMs: number;
  warmupMs: number;
  driftMs: number;
  rss: Array<{ instance: string; startMiB: number; endMiB: number; growthMiB: number }>;
  /** The bounds broken (empty: the soak passed). */
  failures: string[];
  /** The printed report, `N errors` last. */
  lines: string[];
}

/**
 * The bounds a soak broke, from its measures (pure: test/ops/soak-bounds.test.ts shows each bound
 * trips). A drift is a rise that builds window after window; a spike of other work in the last
 * window alone (the box is shared, CI runs the suite beside it) is not one.
 */
export function soakFailures(
  m: {
    windows: ReadonlyArray<{ p99: number; calls: number }>;
    rss: ReadonlyArray<{ instance: string; growthMiB: number }>;
    errors: number;
  },
  bounds: { maxGrowthMiB: number; maxP99Ratio: number; maxP99RiseMs: number },
): string[] {
  const failures: string[] = [];
  m.windows.forEach((w, k) => {
    if (w.calls === 0) failures.push(`window ${k + 1} answered no call`);
  });
  const first = m.windows[0]?.p99 ?? 0;
  const last = m.windows[m.windows.length - 1]?.p99 ?? 0;
  const rising = m.windows.every((w, k) => k === 0 || w.p99 >= (m.windows[k - 1]?.p99 ?? 0));
  if (first > 0 && rising && last > first * bounds.maxP99Ratio && last - first > bounds.maxP99RiseMs) {
    failures.push(
      `p99 drift ${first} → ${last} ms, rising in every window, past both ×${bounds.maxP99Ratio} and +${bounds.maxP99RiseMs} ms`,
    );
  }
  // NaN (a service gone, no sample) fails too.
  for (const r of m.rss)
    if (!(r.growthMiB <= bounds.maxGrowthMiB))
      failures.push(`${r.instance} RSS grew ${r.growthMiB.toFixed(1)} MiB (bound ${bounds.maxGrowthMiB} MiB)`);
  if (m.errors > 0) failures.push(`${m.errors} errors`);
  return failures;
}

function rssMiB(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m?.[1] === undefined ? NaN : Number(m[1]) / 1024;
  } catch {
    return NaN; // the process is gone: its exit is reported as an error
  }
}

function median(xs: number[]): number {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/**
 * An error's message with its causes': fetch says only "fetch failed", and names what failed (a
 * refused connection, a socket closed under the request: code, message, address) in `cause`.
 */
export function errorText(err: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 4; depth++) {
    const x = e as Error & { code?: unknown; address?: unknown; port?: unknown };
    const code = typeof x.code === 'string' ? `${x.code} ` : '';
    const at = typeof x.address === 'string' ? ` (${x.address}:${typeof x.port === 'number' ? x.port : ''})` : '';
    parts.push(`${code}${x.message}${at}`);
    e = x.cause;
  }
  return parts.length > 0 ? parts.join(': ') : String(err);
}

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
/** Each caller starts a run (five calls and EndRun) at most this often. */
const RUN_PERIOD_MS = 500;

export async function runSoak(opts: SoakOptions): Promise<SoakReport> {
  const totalMs = opts.minutes * 60_000;
  if (!(totalMs > 0)) throw new Error('minutes must be > 0');
  const maxGrowthMiB = opts.maxGrowthMiB ?? SOAK_BOUNDS.maxGrowthMiB;
  const maxP99Ratio = opts.maxP99Ratio ?? SOAK_BOUNDS.maxP99Ratio;
  const maxP99RiseMs = opts.maxP99RiseMs ?? SOAK_BOUNDS.maxP99RiseMs;
  const lines: string[] = [];
  const say = (line: string): void => {
    lines.push(line);
    (opts.log ?? ((l: string) => void process.stdout.write(`${l}\n`)))(line);
  };

  let dropped = 0;
  const dropTool: TestTool = {
    name: 'drop_table',
    description: 'Drops a table (destructive: always asks).',
    inputSchema: { type: 'object', properties: { table: { type: 'string' } }, required: ['table'] },
    annotations: { destructiveHint: true },
    handler: (args) => {
      dropped++;
      return { content: [{ type: 'text', text: `dropped ${String(args['table'])}` }] };
    },
  };
  const extra = (n: number): TestTool => ({
    name: `v${n}`,
    description: `version ${n}`,
    inputSchema: { type: 'object' },
    handler: () => ({ content: [{ type: 'text', text: String(n) }] }),
  });

  const [modern, legacy] = await Promise.all([
    startTestMcpServer({ era: 'modern', tools: [echoTool(), dropTool] }),
    startTestMcpServer({ era: 'legacy', tools: [echoTool()] }),
  ]);
  let stack: Stack | undefined;
  try {
    // From the sources, as the image runs them: the soak measures the processes' own memory.
    stack = await Stack.start({
      registries: 0,
      projectors: 0,
      proxies: 0,
      env: { LOG_LEVEL: 'error' },
      fromSources: true,
    });
    const s = stack;
    // Side by side: on a loaded box four service starts one after the other took a minute.
    await Promise.all([s.spawn('registry'), s.spawn('projector'), s.spawn('proxy'), s.spawn('proxy')]);
    const errors: string[] = [];
    const samples: Array<{ at: number; ms: number }> = [];
    const counts = { calls: 0, runs: 0, discoveries: 0, grants: 0, approvals: 0 };
    // A socket closed under a request (ECONNRESET, 'other side closed'): on a box so loaded that
    // timers fire seconds late, a keep-alive socket is reused as its server closes it. The proxy's
    // to the test upstream (the connector reports it truly: maybe_executed, never retried; a
    // connect fails), and this process's own to the registry (an action's fetch failed, its cause
    // the closed socket). Counted apart and bounded (`failureOf`); anything else is an error.
    const resets: string[] = [];
    // A store's outage said as such (`unavailable`: retryable, nothing sent) is retried after its
    // hint, as the wire tells a runtime to (a starved box's Redis command can time out in the
    // overloaded first seconds); counted apart and bounded. It fails the soak if it persists.
    let retried = 0;
    const again = async <T>(fn: () => Promise<T>): Promise<T> => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await fn();
        } catch (err) {
          if (!(err instanceof WireError) || err.code !== 'unavailable' || attempt >= 3) throw err;
          retried++;
          await pause(err.retryAfterMs ?? 500);
        }
      }
    };
    const fail = (what: string, err: unknown): void => {
      const f = failureOf(what, err);
      (f.kind === 'reset' ? resets : errors).push(f.text);
    };

    await s.setServer('m', modern.url);
    await s.setServer('l', legacy.url);
    const agent = await s.createAgent('soak', ['m', 'l'], 3);
    const granted = await s.createAgent('grants', ['m'], 2);
    const started = Date.now();
    const end = started + totalMs;
    const warmupMs = Math.min(60_000, totalMs / 6);
    const windowMs = (totalMs - warmupMs) / 4;
    const windowOf = (t: number): number => Math.floor((t - started - warmupMs) / windowMs);

    // RSS of each service every two seconds, with the time it was read.
    const rssSamples = new Map<string, Array<{ at: number; mib: number }>>(s.services.map((svc) => [svc.instance, []]));
    const sampleRss = (): void => {
      const at = Date.now();
      for (const svc of s.services) rssSamples.get(svc.instance)?.push({ at, mib: rssMiB(svc.child.pid) });
    };
    sampleRss();
    const rssTimer = setInterval(sampleRss, 2_000);

    const callers = Array.from({ length: 4 }, async (_, w) => {
      let next = Date.now() + w * (RUN_PERIOD_MS / 4);
      for (let r = 0; Date.now() < end; r++) {
        if (next > Date.now()) await pause(next - Date.now());
        next = Math.max(Date.now(), next + RUN_PERIOD_MS);
        if (Date.now() >= end) break;
        const run = `soak-${w}-${r}`;
        counts.runs++;
        for (let c = 0; c < 5; c++) {
          const t0 = Date.now();
          try {
            const server = c % 2 === 0 ? 'm' : 'l';
            const out = await again(() => s.call(agent, run, `${server}__echo`, { text: `${w}.${r}.${c}` }));
            if (out.result.text !== `echo: ${w}.${r}.${c}`)
              errors.push(`call ${run}: wrong answer ${out.result.text ?? ''}`);
            samples.push({ at: t0, ms: Date.now() - t0 });
            counts.calls++;
          } catch (err) {
            fail(`call ${run}`, err);
          }
        }
        await s.api.act('EndRun', { run }).catch((err: unknown) => fail(`EndRun ${run}`, err));
      }
    });

    const discoveries = (async () => {
      for (let n = 1; Date.now() < end; n++) {
        modern.setTools([echoTool(), dropTool, extra(n)]);
        await s.api.act('RefreshMcpServer', { name: 'm' }).then(
          () => void counts.discoveries++,
          (err: unknown) => fail('RefreshMcpServer', err),
        );
        await pause(1_000);
      }
    })();

    const grants = (async () => {
      for (let n = 0; Date.now() < end; n++) {
        const servers = n % 2 === 0 ? [] : ['m'];
        await s.api.act('UpdateAgent', { agent: granted, definition: { mcpServers: servers } }).then(
          () => void counts.grants++,
          (err: unknown) => fail('UpdateAgent', err),
        );
        await pause(1_500);
      }
    })();

    const approvals = (async () => {
      for (let n = 0; Date.now() < end; n++) {
        const run = `approve-${n}`;
        try {
          const stopped = await again(() =>
            s
              .callError(agent, run, 'm__drop_table', { table: `t${n}` })
              .then((e) => (e.code === 'unavailable' ? Promise.reject(e) : e)),
          );
          if (stopped.code !== 'approval_required') throw stopped;
          const approvalId = stopped.details.approvalId as string;
          await again(() => s.api.act('ApproveToolCall', { approvalId }));
          const before = dropped;
          const out = await again(() => s.call(agent, run, 'm__drop_table', { table: `t${n}` }, { approvalId }));
          if (out.result.text !== `dropped t${n}` || dropped !== before + 1)
            errors.push(`approval ${n}: ran ${dropped - before} times`);
          counts.approvals++;
        } catch (err) {
          fail(`approval ${n}`, err);
        }
        await pause(2_000);
      }
    })();

    const progress = setInterval(
      () => say(`soak: ${Math.round((Date.now() - started) / 1000)} s, ${counts.calls} calls, ${errors.length} errors`),
      30_000,
    );
    try {
      await Promise.all([...callers, discoveries, grants, approvals]);
    } finally {
      clearInterval(progress);
      clearInterval(rssTimer);
    }
    sampleRss();
    for (const svc of s.services)
      if (!svc.alive()) errors.push(`${svc.instance} exited (${svc.child.exitCode ?? svc.child.signalCode})`);

    const windows = Array.from({ length: 4 }, (_, k) => {
      const ms = samples.filter((x) => windowOf(x.at) === k).map((x) => x.ms);
      return { p99: percentile(ms, 99), calls: ms.length };
    });
    const first = windows[0]?.p99 ?? 0;
    const last = windows[windows.length - 1]?.p99 ?? 0;
    const driftMs = last - first;
    const rss = s.services.map((svc) => {
      const xs = rssSamples.get(svc.instance) ?? [];
      const startMiB = median(xs.filter((x) => windowOf(x.at) === 0).map((x) => x.mib));
      const endMiB = median(xs.filter((x) => windowOf(x.at) >= 3).map((x) => x.mib));
      return { instance: svc.instance, startMiB, endMiB, growthMiB: endMiB - startMiB };
    });
    const failures = soakFailures({ windows, rss, errors: errors.length }, { maxGrowthMiB, maxP99Ratio, maxP99RiseMs });
    const maxResets = Math.max(2, Math.ceil(counts.calls * 0.01));
    if (resets.length > maxResets)
      failures.push(`${resets.length} socket resets (bound ${maxResets}: 1 % of the calls)`);
    if (retried > maxResets)
      failures.push(`${retried} retries after unavailable (bound ${maxResets}: 1 % of the calls)`);

    say(
      `soak: ${opts.minutes} min, ${counts.calls} calls in ${counts.runs} runs, ${counts.discoveries} discoveries, ${counts.grants} grant changes, ${counts.approvals} approvals`,
    );
    say(
      `soak: warm-up ${Math.round(warmupMs / 1000)} s, then p99 per ${Math.round(windowMs / 1000)} s: ${windows.map((w) => `${w.p99} ms (${w.calls} calls)`).join(', ')}; ` +
        `drift ${driftMs >= 0 ? '+' : ''}${driftMs} ms (${first > 0 ? ((last / first - 1) * 100).toFixed(0) : '?'} %; fails if rising in every window past both ×${maxP99Ratio} and +${maxP99RiseMs} ms)`,
    );
    for (const r of rss)
      say(
        `soak: ${r.instance} RSS ${r.startMiB.toFixed(0)} → ${r.endMiB.toFixed(0)} MiB (${r.growthMiB >= 0 ? '+' : ''}${r.growthMiB.toFixed(1)} MiB; bound ${maxGrowthMiB} MiB)`,
      );
    for (const e of errors.slice(0, 20)) say(`soak error: ${e}`);
    // What the services logged at error level (the stack runs them at LOG_LEVEL=error): the cause
    // behind an `internal` a caller saw.
    if (errors.length > 0) {
      const logged = s
        .allLogs()
        .split('\n')
        .filter((l) => l.includes('"level":"error"'));
      for (const l of logged.slice(0, 20)) say(`soak service error: ${l.slice(0, 1_000)}`);
    }
    if (resets.length > 0)
      say(`soak: ${resets.length} socket resets (bound ${maxResets}): ${resets.slice(0, 5).join('; ')}`);
    if (retried > 0) say(`soak: ${retried} retries after unavailable (bound ${maxResets})`);
    for (const f of failures) say(`soak failed: ${f}`);
    say(`${errors.length} errors`);
    return { counts, errors, windows, windowMs, warmupMs, driftMs, rss, failures, lines };
  } finally {
    await stack?.stop();
    await Promise.all([modern.close(), legacy.close()]);
  }
}
