import { metrics, trace } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { makeSubjects, type CallProgress } from '@mcpx/contracts';
import { PROGRESS_BURST, ProgressRelay } from './progress-relay.js';

describe("the proxy's progress relay", () => {
  const open = () => {
    const sent: Array<{ subject: string; value: CallProgress }> = [];
    const relay = new ProgressRelay(
      (subject, value) => sent.push({ subject, value }),
      makeSubjects('t1.'),
      metrics.getMeter('test'),
    );
    const sink = relay.open(
      { account: 'acct', run: 'run-1', callId: 'call-1' },
      trace.getTracer('test').startSpan('call'),
    );
    return { sent, sink };
  };

  it("sends the first events (the burst) at once on the call's subject; those sooner than their turn are replaced by the latest, which goes out at the call's end", () => {
    const { sent, sink } = open();
    sink.progress({ progress: 1, total: 10, message: 'one' });
    for (let i = 2; i <= 500; i++) sink.progress({ progress: i, total: 500 });
    expect(sent[0]).toEqual({
      subject: 't1.mcp.calls.progress.acct.run-1.call-1',
      value: { progress: 1, total: 10, message: 'one' },
    });
    expect(sent.map((s) => s.value.progress)).toEqual([1, 2, 3].slice(0, PROGRESS_BURST));
    sink.close();
    expect(sent.map((s) => s.value)).toEqual([
      { progress: 1, total: 10, message: 'one' },
      ...[2, 3].slice(0, PROGRESS_BURST - 1).map((p) => ({ progress: p, total: 500 })),
      { progress: 500, total: 500 },
    ]);
    // Nothing after the call's end.
    sink.progress({ progress: 501 });
    expect(sent).toHaveLength(PROGRESS_BURST + 1);
  });

  it('drops a value that is not a finite number, keeps only finite totals and cuts a long message', () => {
    const { sent, sink } = open();
    for (const bad of [{ progress: 'x' }, { progress: Number.NaN }, { progress: Infinity }, { progress: undefined }])
      sink.progress(bad);
    sink.progress({ progress: 1, total: Number.POSITIVE_INFINITY, message: 'm'.repeat(5000) });
    sink.close();
    expect(sent).toHaveLength(1);
    expect(sent[0]?.value).toEqual({ progress: 1, message: 'm'.repeat(1024) });
  });

  it('a publish that throws (a closed connection) does not reach the call', () => {
    const relay = new ProgressRelay(
      () => {
        throw new Error('closed');
      },
      makeSubjects(),
      metrics.getMeter('test'),
    );
    const sink = relay.open({ account: 'a', run: 'r', callId: 'c' }, trace.getTracer('test').startSpan('call'));
    expect(() => sink.progress({ progress: 1 })).not.toThrow();
    expect(() => sink.close()).not.toThrow();
  });
});
