import { describe, expect, it } from 'vitest';
import { FULL_RETRY_MS, capRefusal, runIsIdle, shareable, slotStep, verdictOutcome } from './pool-rules.js';

describe('capRefusal: a full instance refuses new work, retryably', () => {
  it('has room below the cap, and no cap at 0', () => {
    expect(capRefusal('runs_per_proxy', 9_999, 10_000, 'runs')).toBeUndefined();
    expect(capRefusal('connections_per_proxy', 1_000_000, 0, 'remote connections')).toBeUndefined();
  });

  it('refuses at the cap with rate_limited, the limit and a retry hint (another instance may take it)', () => {
    const err = capRefusal('connections_per_proxy', 2_000, 2_000, 'remote connections');
    expect(err?.code).toBe('rate_limited');
    expect(err?.retryable).toBe(true);
    expect(err?.message).toBe(
      'this proxy instance holds its 2000 remote connections; retry (another instance may take it)',
    );
    expect(err?.details).toEqual({ limit: 'connections_per_proxy', max: 2_000, retryAfterMs: FULL_RETRY_MS });
    expect(capRefusal('runs_per_proxy', 10_001, 10_000, 'runs')?.details.limit).toBe('runs_per_proxy');
  });
});

describe('slotStep: which connection a call goes out on', () => {
  it('opens one for a run that has none, uses the run’s own (open or still connecting), replaces one the server closed', () => {
    expect(slotStep(undefined)).toBe('open');
    expect(slotStep({ closed: false })).toBe('use');
    expect(slotStep({ closed: undefined })).toBe('use');
    expect(slotStep({ closed: true })).toBe('replace');
  });
});

describe('shareable: only a modern connection is shared by runs', () => {
  it('shares an open modern connection, never a legacy session or a closed connection', () => {
    expect(shareable({ era: 'modern', closed: false })).toBe(true);
    expect(shareable({ era: 'modern', closed: true })).toBe(false);
    expect(shareable({ era: 'legacy', closed: false })).toBe(false);
  });
});

describe('verdictOutcome', () => {
  it('probed without a cached verdict, reused with one, reprobed when the cached one stopped working', () => {
    expect(verdictOutcome(false, false)).toBe('probed');
    expect(verdictOutcome(false, true)).toBe('probed');
    expect(verdictOutcome(true, false)).toBe('reused');
    expect(verdictOutcome(true, true)).toBe('reprobed');
  });
});

describe('runIsIdle', () => {
  it('closes a run with no call in progress and none since the cutoff, never one with a call in progress', () => {
    expect(runIsIdle({ active: 0, lastUsed: 99 }, 100)).toBe(true);
    expect(runIsIdle({ active: 0, lastUsed: 100 }, 100)).toBe(false);
    expect(runIsIdle({ active: 1, lastUsed: 0 }, 100)).toBe(false);
  });
});
