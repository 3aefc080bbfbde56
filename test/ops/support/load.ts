/**
 * A bounded load loop: `concurrency` workers each run `op` back to back until stopped (or the
 * hard deadline), recording every outcome with its time; the summary gives calls/s, p50/p99,
 * errors by code and, around a fault, the time from a moment to the first success after it.
 */
import { percentile } from './stack.js';

export interface Outcome {
  at: number;
  ms: number;
  ok: boolean;
  code?: string;
  worker: number;
}

export interface LoadSummary {
  calls: number;
  ok: number;
  errors: number;
  errorsByCode: Record<string, number>;
  callsPerSecond: number;
  p50: number;
  p99: number;
  seconds: number;
}

export class LoadLoop {
  readonly outcomes: Outcome[] = [];
  private stopped = false;
  private readonly workers: Promise<void>[] = [];
  private readonly startedAt = Date.now();

  constructor(
    op: (worker: number, i: number) => Promise<unknown>,
    opts: { concurrency: number; maxMs: number; pauseMs?: number },
  ) {
    const hardStop = this.startedAt + opts.maxMs;
    for (let w = 0; w < opts.concurrency; w++) {
      this.workers.push(
        (async () => {
          for (let i = 0; !this.stopped && Date.now() < hardStop; i++) {
            const t0 = Date.now();
            try {
              await op(w, i);
              this.outcomes.push({ at: t0, ms: Date.now() - t0, ok: true, worker: w });
            } catch (err) {
              const code = (err as { code?: unknown }).code;
              this.outcomes.push({
                at: t0,
                ms: Date.now() - t0,
                ok: false,
                code: typeof code === 'string' ? code : (err as Error).message.slice(0, 80),
                worker: w,
              });
              // An error is often a fault being injected: do not spin on it.
              await new Promise((r) => setTimeout(r, 50));
            }
            if (opts.pauseMs) await new Promise((r) => setTimeout(r, opts.pauseMs));
          }
        })(),
      );
    }
  }

  async stop(): Promise<LoadSummary> {
    this.stopped = true;
    await Promise.all(this.workers);
    return summarize(this.outcomes, Date.now() - this.startedAt);
  }

  /** The first success that started after `t` (ms since epoch), minus `t`: the time to recover. */
  recoveryAfter(t: number): number | undefined {
    const first = this.outcomes.filter((o) => o.ok && o.at >= t).sort((a, b) => a.at - b.at)[0];
    return first === undefined ? undefined : first.at + first.ms - t;
  }

  successesAfter(t: number): number {
    return this.outcomes.filter((o) => o.ok && o.at >= t).length;
  }
}

export function summarize(outcomes: Outcome[], elapsedMs: number): LoadSummary {
  const ok = outcomes.filter((o) => o.ok);
  const errorsByCode: Record<string, number> = {};
  for (const o of outcomes) if (!o.ok) errorsByCode[o.code ?? '?'] = (errorsByCode[o.code ?? '?'] ?? 0) + 1;
  const lat = ok.map((o) => o.ms);
  return {
    calls: outcomes.length,
    ok: ok.length,
    errors: outcomes.length - ok.length,
    errorsByCode,
    callsPerSecond: Math.round((ok.length / Math.max(1, elapsedMs)) * 1000 * 10) / 10,
    p50: percentile(lat, 50),
    p99: percentile(lat, 99),
    seconds: Math.round(elapsedMs / 100) / 10,
  };
}

export function formatSummary(s: LoadSummary): string {
  const codes = Object.entries(s.errorsByCode)
    .map(([c, n]) => `${c} ${n}`)
    .join(', ');
  return `${s.ok}/${s.calls} ok in ${s.seconds} s, ${s.callsPerSecond} calls/s, p50 ${s.p50} ms, p99 ${s.p99} ms, ${s.errors} errors${codes ? ` (${codes})` : ''}`;
}
