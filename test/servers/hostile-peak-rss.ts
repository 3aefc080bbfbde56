/**
 * The peak resident memory of another process (a service under attack), from Linux's own
 * accounting: `VmHWM` is the high-water mark of its RSS, kept by the kernel, so no sample is
 * missed; writing 5 to `clear_refs` resets it to the current RSS. Memory, not time, is measured.
 */
import { readFileSync, writeFileSync } from 'node:fs';

const MiB = 1024 * 1024;

function statusField(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(status);
  if (m?.[1] === undefined) throw new Error(`no ${field} for process ${pid}`);
  return Number(m[1]) * 1024;
}

export interface PeakWatch {
  /** RSS when the watch began (after the reset), in bytes. */
  baseline: number;
  /** How far the peak RSS has risen above the baseline so far, in MiB. */
  growthMiB(): number;
}

/** Resets the peak RSS of `pid` and starts watching its growth from there. */
export function watchPeakRss(pid: number): PeakWatch {
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
  const baseline = statusField(pid, 'VmRSS');
  return { baseline, growthMiB: () => (statusField(pid, 'VmHWM') - baseline) / MiB };
}
