import { describe, expect, it } from 'vitest';
import { RELAY_CACHE_MAX_TTL_MS, RelayCache, boundRelayResult } from './relay-requests.js';

describe('the proxy relay: bounds and cache', () => {
  it('leaves out listed URIs that break the rule and counts them', () => {
    const out = boundRelayResult(
      'resources/list',
      {
        resources: [
          { uri: 'javascript:x', name: 'a' },
          { uri: 'test://ok', name: 'b' },
          { uri: 'file:///a/../b', name: 'c' },
        ],
        ttlMs: 5,
      },
      1 << 20,
    );
    expect(out.resources).toEqual([{ uri: 'test://ok', name: 'b' }]);
    expect(out._meta).toEqual({ 'io.mcpx/omitted': { unsafeUris: 2 } });
    const templates = boundRelayResult(
      'resources/templates/list',
      { resourceTemplates: [{ uriTemplate: 'test://t/{id}', name: 't' }] },
      1 << 20,
    );
    expect(templates.resourceTemplates).toHaveLength(1);
    expect(templates._meta).toBeUndefined();
  });

  it('replaces contents past the bound in their place with a marker, and keeps a result within it as it is', () => {
    const small = { contents: [{ uri: 'test://a', text: 'x' }] };
    expect(boundRelayResult('resources/read', small, 64 * 1024)).toBe(small);
    const big = boundRelayResult(
      'resources/read',
      {
        contents: [
          { uri: 'test://a', text: 'x' },
          { uri: 'test://a', mimeType: 'image/png', blob: 'A'.repeat(200_000) },
        ],
      },
      64 * 1024,
    );
    expect(big.contents).toEqual([
      { uri: 'test://a', text: 'x' },
      {
        uri: 'test://a',
        mimeType: 'image/png',
        text: expect.stringMatching(
          /^\[mcpx: left out: \d+ bytes, over the 65536-byte bound of a relayed result\]$/,
        ) as unknown,
      },
    ]);
    expect(big._meta).toEqual({ 'io.mcpx/omitted': { overLimit: 1, limit: 65_536 } });
    expect(Buffer.byteLength(JSON.stringify(big))).toBeLessThanOrEqual(65_536);
    // A completion has no list to cut: over the bound it is an error, typed.
    expect(() =>
      boundRelayResult('completion/complete', { completion: { values: ['v'.repeat(100_000)] } }, 64 * 1024),
    ).toThrow(expect.objectContaining({ code: 'server_error' }));
  });

  it('keeps a result by its ttlMs, at most five minutes, and not one without', () => {
    const cache = new RelayCache();
    cache.put('a\u0000db\u0000k', { resources: [], ttlMs: 1_000 }, 0);
    cache.put('a\u0000db\u0000none', { resources: [] }, 0);
    cache.put('a\u0000db\u0000long', { resources: [], ttlMs: 10 * RELAY_CACHE_MAX_TTL_MS }, 0);
    expect(cache.get('a\u0000db\u0000k', 999)).toEqual({ resources: [], ttlMs: 1_000 });
    expect(cache.get('a\u0000db\u0000k', 1_000)).toBeUndefined();
    expect(cache.get('a\u0000db\u0000none', 1)).toBeUndefined();
    expect(cache.get('a\u0000db\u0000long', RELAY_CACHE_MAX_TTL_MS)).toBeUndefined();
    cache.put('a\u0000db\u0000x', { prompts: [], ttlMs: 1_000 }, 0);
    cache.put('b\u0000db\u0000x', { prompts: [], ttlMs: 1_000 }, 0);
    cache.forget('a', 'db');
    expect(cache.get('a\u0000db\u0000x', 1)).toBeUndefined();
    expect(cache.get('b\u0000db\u0000x', 1)).toBeDefined();
  });
});
