import { metrics, trace } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { makeSubjects, type CallLog, type LogLevel } from '@mcpx/contracts';
import { LOG_BURST, LogRelay } from './log-relay.js';

describe("the proxy's log relay", () => {
  const open = (level: LogLevel = 'debug') => {
    const sent: Array<{ subject: string; value: CallLog }> = [];
    const relay = new LogRelay(
      (subject, value) => sent.push({ subject, value }),
      makeSubjects('t1.'),
      metrics.getMeter('test'),
    );
    const sink = relay.open(
      { account: 'acct', run: 'run-1', callId: 'call-1' },
      level,
      trace.getTracer('test').startSpan('call'),
    );
    return { sent, sink };
  };

  it("sends each message on the call's subject in order; past the burst they are dropped and the call's end names how many", () => {
    const { sent, sink } = open();
    for (let i = 0; i < 500; i++) sink.message({ level: 'info', logger: 'srv', data: i });
    expect(sent[0]).toEqual({
      subject: 't1.mcp.calls.log.acct.run-1.call-1',
      value: { level: 'info', logger: 'srv', data: 0 },
    });
    const relayed = sent.length;
    expect(relayed).toBeGreaterThanOrEqual(LOG_BURST);
    expect(sent.map((s) => s.value.data)).toEqual([...Array(relayed).keys()]);
    sink.close();
    expect(sent.at(-1)?.value).toEqual({
      level: 'warning',
      logger: 'mcpx',
      data: `${500 - relayed} log messages of the server were left out: over 20 a second`,
    });
    // Nothing after the call's end.
    sink.message({ level: 'info', data: 'late' });
    expect(sent).toHaveLength(relayed + 1);
  });

  it('passes on only the call’s level and above, and only MCP log messages', () => {
    const { sent, sink } = open('warning');
    for (const level of ['debug', 'info', 'notice', 'warning', 'error', 'emergency'])
      sink.message({ level, data: level });
    for (const bad of [null, 'text', { level: 'loud', data: 1 }, { data: 1 }]) sink.message(bad);
    sink.close();
    expect(sent.map((s) => s.value.data)).toEqual(['warning', 'error', 'emergency']);
  });

  it('bounds what a message carries: data past 8 KiB, nested past 32 levels or with __proto__ named; the logger cut; absent data null', () => {
    const { sent, sink } = open();
    let deep: unknown = 1;
    for (let i = 0; i < 40; i++) deep = { d: deep };
    sink.message({ level: 'info', logger: 'x'.repeat(500), data: 'y'.repeat(9_000) });
    sink.message({ level: 'info', data: deep });
    sink.message({ level: 'info', data: JSON.parse('{"__proto__": {"polluted": true}}') as unknown });
    sink.message({ level: 'info' });
    sink.close();
    expect(sent[0]?.value.logger).toHaveLength(128);
    expect(sent[0]?.value.data).toMatch(/over the 8192-byte bound/);
    expect(sent[1]?.value.data).toMatch(/nested deeper than 32 levels/);
    expect(sent[2]?.value.data).toMatch(/__proto__/);
    expect(sent[3]?.value).toEqual({ level: 'info', data: null });
  });

  it('a publish that throws (a closed connection) does not reach the call', () => {
    const relay = new LogRelay(
      () => {
        throw new Error('closed');
      },
      makeSubjects(''),
      metrics.getMeter('test'),
    );
    const sink = relay.open(
      { account: 'a', run: 'r', callId: 'c' },
      'debug',
      trace.getTracer('test').startSpan('call'),
    );
    expect(() => sink.message({ level: 'info', data: 1 })).not.toThrow();
    expect(() => sink.close()).not.toThrow();
  });
});
