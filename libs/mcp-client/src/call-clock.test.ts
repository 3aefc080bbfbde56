import { afterEach, describe, expect, it, vi } from 'vitest';
import { CallClock } from './call-clock.js';

describe('CallClock', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("with a caller's signal: its own controller, aborted by the signal (cancelled) or the timeout", () => {
    vi.useFakeTimers();
    const caller = new AbortController();
    const cancelled = new CallClock(1_000, caller.signal);
    caller.abort();
    expect([cancelled.signal.aborted, cancelled.why]).toEqual([true, 'cancelled']);
    cancelled.dispose();
    const timedOut = new CallClock(1_000, new AbortController().signal);
    vi.advanceTimersByTime(1_000);
    expect([timedOut.signal.aborted, timedOut.why]).toEqual([true, 'timeout']);
    timedOut.dispose();
  });

  it("with the caller's own controller: the request's signal is the caller's, its abort a cancel, the timeout aborts it", () => {
    vi.useFakeTimers();
    const own = new AbortController();
    const clock = new CallClock(1_000, undefined, own);
    expect(clock.signal).toBe(own.signal);
    expect(clock.why).toBeUndefined();
    vi.advanceTimersByTime(1_000);
    expect([own.signal.aborted, clock.why]).toEqual([true, 'timeout']);
    clock.dispose();

    const cancelledOwn = new AbortController();
    const cancelled = new CallClock(1_000, undefined, cancelledOwn);
    cancelledOwn.abort();
    expect(cancelled.why).toBe('cancelled');
    // Its timer, had it not been cleared, does not make a cancelled call a timeout.
    vi.advanceTimersByTime(1_000);
    expect(cancelled.why).toBe('cancelled');
    // Nor does progress restart the clock of a call that ended.
    cancelled.restart();
    expect(cancelled.why).toBe('cancelled');
    cancelled.dispose();
  });

  it('restarts its timeout on progress while the call runs', () => {
    vi.useFakeTimers();
    const clock = new CallClock(1_000, undefined, new AbortController());
    vi.advanceTimersByTime(900);
    clock.restart();
    vi.advanceTimersByTime(900);
    expect(clock.why).toBeUndefined();
    vi.advanceTimersByTime(100);
    expect(clock.why).toBe('timeout');
    clock.dispose();
  });
});
