import { metrics } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '@mcpx/contracts';
import { CALL_LABEL_LIMITS, CallMetrics, outcomeOf } from './call-metrics.js';

describe('call metrics: bounded labels, outcomes from the error table', () => {
  it('servers past the cap are `other`, tools past the total cap are `other`, an unresolved call is `unknown`', () => {
    const m = new CallMetrics(metrics.getMeter('call-metrics-test'));
    expect(m.labels({})).toEqual({ server: 'unknown', tool: 'unknown' });
    expect(m.labels({ server: 's0' })).toEqual({ server: 's0', tool: 'unknown' });
    for (let i = 0; i < CALL_LABEL_LIMITS.servers; i++)
      expect(m.labels({ server: `s${i}`, tool: 't' }).server).toBe(`s${i}`);
    expect(m.labels({ server: 'one-too-many', tool: 't' })).toEqual({ server: 'other', tool: 'other' });
    // A known server keeps its name; its tools count against the total.
    let named = 0;
    for (let i = 0; i < CALL_LABEL_LIMITS.toolsTotal + 50; i++)
      if (m.labels({ server: 's1', tool: `tool${i}` }).tool !== 'other') named++;
    expect(named).toBe(CALL_LABEL_LIMITS.toolsTotal - CALL_LABEL_LIMITS.servers);
    expect(m.labels({ server: 's1', tool: 'tool0' })).toEqual({ server: 's1', tool: 'tool0' });
    expect(m.labels({ server: 's1', tool: 'never-seen' })).toEqual({ server: 's1', tool: 'other' });
  });

  it('outcome: ok, refused (nothing ran), error (the server ran it), lost (it may have run)', () => {
    expect(outcomeOf('ok')).toBe('ok');
    expect(outcomeOf(ErrorCodes.invalidArguments)).toBe('refused');
    expect(outcomeOf(ErrorCodes.rateLimited)).toBe('refused');
    expect(outcomeOf(ErrorCodes.unavailable)).toBe('refused');
    expect(outcomeOf(ErrorCodes.serverError)).toBe('error');
    expect(outcomeOf(ErrorCodes.timeout)).toBe('lost');
    expect(outcomeOf(ErrorCodes.maybeExecuted)).toBe('lost');
    expect(outcomeOf('not-a-code')).toBe('refused');
  });
});
