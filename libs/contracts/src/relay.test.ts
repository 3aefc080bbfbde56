import { describe, expect, it } from 'vitest';
import { encodePayload } from './codec.js';
import { decodeRelayRequest, encodeRelayRequest, relayParams, resourceUriFault, type RelayRequest } from './relay.js';

const base: RelayRequest = {
  account: 'acct',
  agent: 'agent',
  run: 'ep-tok',
  server: 'db',
  method: 'resources/read',
  params: { uri: 'test://ok' },
};

describe('the relay request (mcp.proxy.relay)', () => {
  it('accepts the URIs resources have and refuses dot segments, script schemes, controls and bidi', () => {
    for (const ok of [
      'test://static-text',
      'file:///srv/docs/readme.md',
      'ui://widget/app.html',
      'https://example.com/a/b?x=1',
      'test://template/42/data',
      'test://a/..b/c',
    ])
      expect(resourceUriFault(ok), ok).toBeUndefined();
    const bad = [
      '',
      'no-scheme',
      'file:///srv/../etc/passwd',
      'test://a/%2E%2E/b',
      'test://a/./b',
      'javascript:alert(1)',
      'JavaScript:alert(1)',
      'vbscript:x',
      'test://x\u202Egnp.exe',
      'test://x\u0000',
      'test://x\u0085',
      `test://${'a'.repeat(2_050)}`,
    ];
    for (const uri of bad) expect(resourceUriFault(uri), JSON.stringify(uri)).toBeDefined();
    expect(resourceUriFault(42)).toBeDefined();
  });

  it('copies only what MCP defines for each method, naming the first bad field', () => {
    expect(relayParams('resources/list', { cursor: 'c1', _meta: { x: 1 } })).toEqual({ cursor: 'c1' });
    expect(relayParams('prompts/list', undefined)).toEqual({});
    expect(relayParams('prompts/get', { name: 'p', arguments: { a: 'x' }, extra: 1 })).toEqual({
      name: 'p',
      arguments: { a: 'x' },
    });
    expect(() => relayParams('prompts/get', { name: 'p', arguments: { a: { deep: 'x' } } })).toThrow(
      expect.objectContaining({
        code: 'invalid_input',
        details: expect.objectContaining({ field: 'params.arguments.a' }),
      }),
    );
    expect(() =>
      relayParams('prompts/get', {
        name: 'p',
        arguments: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`a${i}`, 'x'])),
      }),
    ).toThrow(expect.objectContaining({ details: expect.objectContaining({ field: 'params.arguments', limit: 64 }) }));
    expect(() => relayParams('resources/read', { uri: 'javascript:alert(1)' })).toThrow(
      expect.objectContaining({ details: expect.objectContaining({ field: 'params.uri' }) }),
    );
    expect(
      relayParams('completion/complete', {
        ref: { type: 'ref/resource', uri: 'test://template/{id}/data' },
        argument: { name: 'id', value: '4' },
      }),
    ).toEqual({
      ref: { type: 'ref/resource', uri: 'test://template/{id}/data' },
      argument: { name: 'id', value: '4' },
    });
    expect(() =>
      relayParams('completion/complete', { ref: { type: 'ref/other' }, argument: { name: 'a', value: '' } }),
    ).toThrow(expect.objectContaining({ details: expect.objectContaining({ field: 'params.ref.type' }) }));
  });

  it('round-trips a request and refuses a hostile one on decode, typed, whatever the encoder did', () => {
    expect(decodeRelayRequest(encodeRelayRequest(base))).toEqual(base);
    expect(() => encodeRelayRequest({ ...base, params: { uri: 'test://a/../b' } })).toThrow(
      expect.objectContaining({ code: 'invalid_input' }),
    );
    // Bytes a caller that skipped the encoder's checks could send.
    expect(() => decodeRelayRequest(encodePayload({ ...base, method: 'tools/call' }))).toThrow(
      expect.objectContaining({ code: 'invalid_input', details: expect.objectContaining({ field: 'method' }) }),
    );
    expect(() => decodeRelayRequest(encodePayload({ ...base, params: { uri: 'javascript:alert(1)' } }))).toThrow(
      expect.objectContaining({ details: expect.objectContaining({ field: 'params.uri' }) }),
    );
    let deep: unknown = 'x';
    for (let i = 0; i < 100; i++) deep = { d: deep };
    expect(() =>
      decodeRelayRequest(
        encodePayload({ ...base, method: 'prompts/get', params: { name: 'p', arguments: { a: deep } } }),
      ),
    ).toThrow(expect.objectContaining({ code: 'invalid_input' }));
    expect(() => decodeRelayRequest(new Uint8Array([0xff, 0x00]))).toThrow(
      expect.objectContaining({ code: 'invalid_input' }),
    );
  });

  it('carries an input round only where a server may ask (prompts/get, resources/read), answers only with the id they go with', () => {
    const prompt: RelayRequest = {
      ...base,
      method: 'prompts/get',
      params: { name: 'p' },
      answers: { forms: true },
      inputRequestId: 'inp_abc',
      inputResponses: { q: { action: 'accept' } },
    };
    expect(decodeRelayRequest(encodeRelayRequest(prompt))).toEqual(prompt);
    // Flags that are not true say nothing, and are not kept.
    expect(decodeRelayRequest(encodePayload({ ...base, answers: { forms: false } }))).toEqual(base);
    const field = (raw: Record<string, unknown>): unknown => {
      try {
        decodeRelayRequest(encodePayload(raw));
      } catch (err) {
        return (err as { details?: { field?: string } }).details?.field;
      }
      return undefined;
    };
    expect(field({ ...base, method: 'resources/list', params: {}, inputRequestId: 'inp_abc' })).toBe('inputRequestId');
    expect(field({ ...base, inputResponses: { q: { action: 'accept' } } })).toBe('inputResponses');
    expect(field({ ...base, inputRequestId: 'not-an-id' })).toBe('inputRequestId');
    expect(field({ ...base, inputRequestId: 'inp_abc', inputResponses: [1] })).toBe('inputResponses');
  });
});
