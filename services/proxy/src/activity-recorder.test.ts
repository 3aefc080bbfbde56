import { metrics } from '@opentelemetry/api';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ProxyCallRequest } from '@mcpx/contracts';
import { ActivityRecorder } from './activity-recorder.js';
import type { ActivityStore, CallColumns, CallRecord } from './activity-store.js';

/** A store that keeps what it is given, or fails while `down` (the decision logic under test is the recorder's). */
class MemoryStore implements ActivityStore {
  rows: CallRecord[] = [];
  down = false;
  writes = 0;
  async write(calls: CallColumns): Promise<void> {
    this.writes++;
    if (this.down) throw new Error('connection refused');
    this.rows.push(...calls.rows());
  }
  async prune(): Promise<number> {
    return 0;
  }
}

const req = (i: number, extra: Partial<ProxyCallRequest> = {}): ProxyCallRequest => ({
  account: 'acct',
  agent: 'ag',
  run: 'r',
  callId: `c${i}`,
  tool: 'demo__echo',
  arguments: { secret: 'never' },
  ...extra,
});

function recorder(store: ActivityStore, buffer = 100, batch = 10): ActivityRecorder {
  return new ActivityRecorder({ store, meter: metrics.getMeter('test'), buffer, flushMs: 60_000, batch });
}

describe('ActivityRecorder', () => {
  it('holds a call synchronously and writes its metadata only, in batches', async () => {
    const store = new MemoryStore();
    const r = recorder(store);
    for (let i = 0; i < 25; i++)
      r.record(
        req(i, { approvalId: i === 0 ? 'apr_1' : undefined }),
        { server: 'demo', tool: 'echo', era: 'modern' },
        i % 5 === 0 ? 'server_error' : 'ok',
        12.4,
      );
    expect(store.writes).toBe(0);
    expect(r.stats.held).toBe(25);
    await r.flush();
    expect(store.writes).toBe(3);
    expect(store.rows).toHaveLength(25);
    expect(store.rows[0]).toMatchObject({
      account: 'acct',
      agent: 'ag',
      run: 'r',
      callId: 'c0',
      server: 'demo',
      tool: 'demo__echo',
      code: 'server_error',
      outcome: 'error',
      durationMs: 12,
      era: 'modern',
      approvalId: 'apr_1',
    });
    expect(store.rows[1]).toMatchObject({ code: 'ok', outcome: 'ok' });
    expect(JSON.stringify(store.rows)).not.toContain('never');
    expect(r.stats).toMatchObject({ recorded: 25, dropped: 0, held: 0 });
  });

  it('drops and counts calls past the buffer instead of holding them up', async () => {
    const store = new MemoryStore();
    const r = recorder(store, 100);
    for (let i = 0; i < 130; i++) r.record(req(i), {}, 'ok', 1);
    expect(r.stats).toMatchObject({ held: 100, dropped: 30 });
    await r.flush();
    expect(store.rows.map((x) => x.callId)).toEqual(Array.from({ length: 100 }, (_, i) => `c${i}`));
  });

  it('keeps a failed batch (bounded), retries it, and loses nothing that fits once the store answers', async () => {
    const store = new MemoryStore();
    const r = recorder(store, 100, 40);
    for (let i = 0; i < 60; i++) r.record(req(i), {}, 'ok', 1);
    store.down = true;
    await r.flush();
    expect(r.stats).toMatchObject({ held: 60, writeFailures: 1, recorded: 0, dropped: 0 });
    // While it is down new calls fill the buffer up to its bound; the rest are counted.
    for (let i = 60; i < 120; i++) r.record(req(i), {}, 'ok', 1);
    expect(r.stats).toMatchObject({ held: 100, dropped: 20 });
    store.down = false;
    await r.flush();
    expect(store.rows.map((x) => x.callId)).toEqual(Array.from({ length: 100 }, (_, i) => `c${i}`));
    expect(r.stats).toMatchObject({ held: 0, recorded: 100 });
  });

  it('writes what it holds on stop, and counts what it could not', async () => {
    const store = new MemoryStore();
    const r = recorder(store);
    r.record(req(1), {}, 'ok', 1);
    await r.stop();
    expect(store.rows).toHaveLength(1);
    const down = new MemoryStore();
    down.down = true;
    const r2 = recorder(down);
    r2.record(req(1), {}, 'ok', 1);
    r2.record(req(2), {}, 'ok', 1);
    await r2.stop();
    expect(r2.stats).toMatchObject({ held: 0, dropped: 2 });
    // After stop nothing more is held.
    r2.record(req(3), {}, 'ok', 1);
    expect(r2.stats.held).toBe(0);
  });

  it('records a duration that is not a finite number of ms as 0, so the batch stays writable', async () => {
    const store = new MemoryStore();
    const r = recorder(store);
    for (const ms of [Number.NaN, Number.POSITIVE_INFINITY, -5]) r.record(req(1), {}, 'ok', ms);
    await r.flush();
    expect(store.rows.map((x) => x.durationMs)).toEqual([0, 0, 0]);
    for (const row of store.rows) expect(Number.isFinite(row.at)).toBe(true);
  });

  it('keeps a task id only when it is a bounded string', async () => {
    const store = new MemoryStore();
    const r = recorder(store);
    r.record({ ...req(1), taskId: 'task-1' } as ProxyCallRequest, {}, 'ok', 1);
    r.record({ ...req(2), taskId: 'x'.repeat(500) } as ProxyCallRequest, {}, 'ok', 1);
    r.record({ ...req(3), taskId: { evil: true } } as unknown as ProxyCallRequest, {}, 'ok', 1);
    await r.flush();
    expect(store.rows.map((x) => x.taskId)).toEqual(['task-1', undefined, undefined]);
  });

  describe("its write timer (a fake clock: the decision when to wake is the recorder's own)", () => {
    afterEach(() => {
      // The spy wraps the fake setTimeout: restored first, then the real clock put back (the other
      // order restored the fake one for good, and every later file of the worker waited forever).
      vi.restoreAllMocks();
      vi.useRealTimers();
    });

    /** A started recorder writing every `flushMs`, and a count of the timers it arms from now on. */
    function started(store: ActivityStore, flushMs = 1_000): { r: ActivityRecorder; armed: () => number } {
      vi.useFakeTimers();
      const spy = vi.spyOn(globalThis, 'setTimeout');
      const r = new ActivityRecorder({ store, meter: metrics.getMeter('test'), buffer: 100, flushMs, batch: 10 });
      r.start();
      return { r, armed: () => spy.mock.calls.length };
    }

    it('is never armed while nothing is held: an idle proxy is not woken up', async () => {
      const store = new MemoryStore();
      const { r, armed } = started(store);
      await vi.advanceTimersByTimeAsync(60_000);
      expect(armed()).toBe(0);
      expect(vi.getTimerCount()).toBe(0);
      expect(store.writes).toBe(0);
      // A call arms one write within the interval; once it is written, the timer is idle again.
      r.record(req(1), {}, 'ok', 1);
      r.record(req(2), {}, 'ok', 1);
      expect(armed()).toBe(1);
      await vi.advanceTimersByTimeAsync(1_000);
      expect(store.rows).toHaveLength(2);
      expect(store.writes).toBe(1);
      await vi.advanceTimersByTimeAsync(60_000);
      expect(armed()).toBe(1);
      expect(vi.getTimerCount()).toBe(0);
      await r.stop();
    });

    it('under load writes once per interval, as before; a failed write is retried on its backoff', async () => {
      const store = new MemoryStore();
      const { r, armed } = started(store);
      for (let s = 0; s < 5; s++) {
        for (let i = 0; i < 3; i++) r.record(req(s * 10 + i), {}, 'ok', 1);
        await vi.advanceTimersByTimeAsync(1_000);
        // Every call of the interval is written at its end.
        expect(store.rows).toHaveLength((s + 1) * 3);
      }
      expect(store.writes).toBe(5);
      expect(armed()).toBe(5);
      store.down = true;
      r.record(req(100), {}, 'ok', 1);
      await vi.advanceTimersByTimeAsync(1_000);
      expect(r.stats).toMatchObject({ held: 1, writeFailures: 1 });
      // Held after a failure: retried after twice the interval, not before.
      store.down = false;
      await vi.advanceTimersByTimeAsync(1_999);
      expect(r.stats.held).toBe(1);
      await vi.advanceTimersByTimeAsync(1);
      expect(r.stats).toMatchObject({ held: 0, recorded: 16 });
      await vi.advanceTimersByTimeAsync(60_000);
      expect(vi.getTimerCount()).toBe(0);
      await r.stop();
    });
  });
});
