import { describe, expect, it } from 'vitest';
import { DEFAULT_ACTIVITY_SETTINGS, parseActivity } from './activity.js';
import { ConfigError } from './config-error.js';

describe('the call log settings (ACTIVITY*)', () => {
  it('defaults: on, 30 days, 1,000,000 calls an account, a 20,000-call buffer written every second', () => {
    expect(parseActivity({})).toEqual(DEFAULT_ACTIVITY_SETTINGS);
    expect(
      parseActivity({
        ACTIVITY: 'off',
        ACTIVITY_RETENTION_DAYS: '7',
        ACTIVITY_MAX_CALLS_PER_ACCOUNT: '5000',
        ACTIVITY_BUFFER: '100',
        ACTIVITY_FLUSH_MS: '50',
        ACTIVITY_PRUNE_MS: '1000',
      }),
    ).toEqual({
      enabled: false,
      retentionDays: 7,
      maxCallsPerAccount: 5000,
      buffer: 100,
      flushMs: 50,
      pruneMs: 1000,
    });
  });

  it.each([
    ['ACTIVITY', 'maybe'],
    ['ACTIVITY_RETENTION_DAYS', '0'],
    ['ACTIVITY_RETENTION_DAYS', '4000'],
    ['ACTIVITY_MAX_CALLS_PER_ACCOUNT', '999'],
    ['ACTIVITY_BUFFER', '10'],
    ['ACTIVITY_BUFFER', '1e9x'],
    ['ACTIVITY_FLUSH_MS', '10'],
    ['ACTIVITY_FLUSH_MS', '600000'],
    ['ACTIVITY_PRUNE_MS', '-1'],
  ])('refuses %s=%s, naming it', (name, value) => {
    let err: unknown;
    try {
      parseActivity({ [name]: value });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toContain(name);
  });
});
