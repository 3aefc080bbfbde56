import { integerSetting, onOffSetting } from './settings.js';

/**
 * The call log (docs/activity.md), read by the proxy (which writes it) and the registry (which
 * reads it).
 * - `ACTIVITY` (`on` | `off`, default `on`): whether proxies record their calls.
 * - `ACTIVITY_RETENTION_DAYS` (default 30, 1 to 3650): calls older than this are deleted.
 * - `ACTIVITY_MAX_CALLS_PER_ACCOUNT` (default 1,000,000, at least 1,000): an account's oldest calls
 *   past this many are deleted.
 * - `ACTIVITY_BUFFER` (default 20,000, at least 100): calls a proxy holds before they are written;
 *   past it a call is not recorded (counted in `mcpx_activity_dropped_total{reason="buffer_full"}`),
 *   never held up.
 * - `ACTIVITY_FLUSH_MS` (default 1,000, 50 to 60,000): how often a proxy writes what it holds.
 * - `ACTIVITY_PRUNE_MS` (default 600,000, at least 100): how often a proxy trims the log (jittered).
 */
export interface ActivitySettings {
  enabled: boolean;
  retentionDays: number;
  maxCallsPerAccount: number;
  buffer: number;
  flushMs: number;
  pruneMs: number;
}

export const DEFAULT_ACTIVITY_SETTINGS: Readonly<ActivitySettings> = {
  enabled: true,
  retentionDays: 30,
  maxCallsPerAccount: 1_000_000,
  buffer: 20_000,
  flushMs: 1_000,
  pruneMs: 600_000,
};

export function parseActivity(env: NodeJS.ProcessEnv): ActivitySettings {
  const d = DEFAULT_ACTIVITY_SETTINGS;
  return {
    enabled: onOffSetting(env, 'ACTIVITY', d.enabled),
    retentionDays: integerSetting(env, 'ACTIVITY_RETENTION_DAYS', {
      fallback: d.retentionDays,
      min: 1,
      max: 3650,
      message: 'ACTIVITY_RETENTION_DAYS must be a whole number of days from 1 to 3650',
    }),
    maxCallsPerAccount: integerSetting(env, 'ACTIVITY_MAX_CALLS_PER_ACCOUNT', {
      fallback: d.maxCallsPerAccount,
      min: 1_000,
    }),
    buffer: integerSetting(env, 'ACTIVITY_BUFFER', { fallback: d.buffer, min: 100 }),
    flushMs: integerSetting(env, 'ACTIVITY_FLUSH_MS', {
      fallback: d.flushMs,
      min: 50,
      max: 60_000,
      message: 'ACTIVITY_FLUSH_MS must be a number of milliseconds from 50 to 60000',
    }),
    pruneMs: integerSetting(env, 'ACTIVITY_PRUNE_MS', { fallback: d.pruneMs, min: 100 }),
  };
}
