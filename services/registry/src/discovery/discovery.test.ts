import { describe, expect, it } from 'vitest';
import { toolsHash } from '../catalog/remote-tools.js';
import { REPROBE_BACKOFF, nextProbeDelayMs } from './discovery-schedule.js';
import { wantsOAuth } from './discovery-types.js';

describe('re-probe backoff', () => {
  it('doubles per failure from the base, caps at the maximum, with ±20 % jitter', () => {
    expect(nextProbeDelayMs(1, () => 0.5)).toBe(REPROBE_BACKOFF.baseMs);
    expect(nextProbeDelayMs(2, () => 0.5)).toBe(2 * REPROBE_BACKOFF.baseMs);
    expect(nextProbeDelayMs(4, () => 0.5, 200)).toBe(1600);
    expect(nextProbeDelayMs(60, () => 0.5)).toBe(REPROBE_BACKOFF.maxMs);
    expect(nextProbeDelayMs(1, () => 0, 1000)).toBe(800);
    expect(nextProbeDelayMs(1, () => 1, 1000)).toBe(1200);
  });
});

describe('401 classification', () => {
  it('is auth_required only when the server points at OAuth metadata', () => {
    expect(wantsOAuth(undefined)).toBe(false);
    expect(wantsOAuth('Bearer realm="x"')).toBe(false);
    expect(wantsOAuth('Bearer resource_metadata="https://h/.well-known/oauth-protected-resource"')).toBe(true);
  });
});

describe('tools hash', () => {
  it('is canonical: key order does not matter, content does', () => {
    const a = toolsHash([
      { name: 'x', description: 'd', inputSchema: { type: 'object', properties: { a: { type: 'string' } } } },
    ]);
    const b = toolsHash([
      { inputSchema: { properties: { a: { type: 'string' } }, type: 'object' }, description: 'd', name: 'x' },
    ]);
    expect(a).toBe(b);
    expect(toolsHash([{ name: 'x', description: 'e' }])).not.toBe(toolsHash([{ name: 'x', description: 'd' }]));
  });
});
