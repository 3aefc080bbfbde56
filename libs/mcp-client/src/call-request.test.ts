import { describe, expect, it } from 'vitest';
import { legacyRequest, modernRequest } from './call-request.js';
import type { LegacyTarget, ModernTarget } from './call-target.js';

/** The parts of a target the request builders read (the rest is the call path's). */
function modern(headers: Record<string, string>): ModernTarget {
  return {
    headers,
    protocolVersion: '2026-07-28',
    capabilities: { roots: {} },
    clientInfo: { name: 'mcpx', version: '1.0.0' },
    traceMeta: () => undefined,
  } as unknown as ModernTarget;
}

describe('the call requests', () => {
  it("a modern request: the connection's headers, the standard ones, the caller's _meta under the envelope's keys", () => {
    const { headers, body } = modernRequest(
      modern({ authorization: 'Bearer t' }),
      'c1',
      { name: 'echo', arguments: { m: 'hi' }, _meta: { 'app/key': 1 } },
      {
        timeoutMs: 1_000,
        trace: { traceparent: '00-0123456789abcdef0123456789abcdef-0123456789abcdef-01' },
        logLevel: 'info',
      },
      'p1',
    );
    expect(headers).toEqual({
      authorization: 'Bearer t',
      traceparent: '00-0123456789abcdef0123456789abcdef-0123456789abcdef-01',
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': 'echo',
    });
    expect(JSON.parse(body)).toEqual({
      jsonrpc: '2.0',
      id: 'c1',
      method: 'tools/call',
      params: {
        name: 'echo',
        arguments: { m: 'hi' },
        _meta: {
          traceparent: '00-0123456789abcdef0123456789abcdef-0123456789abcdef-01',
          'app/key': 1,
          progressToken: 'p1',
          'io.modelcontextprotocol/logLevel': 'info',
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': { roots: {} },
          'io.modelcontextprotocol/clientInfo': { name: 'mcpx', version: '1.0.0' },
        },
      },
    });
  });

  it("a `__proto__` key in a caller's _meta or a connection's headers is sent as the key it is, never made a prototype", () => {
    const hostileMeta = JSON.parse('{"__proto__":{"polluted":true},"k":1}') as Record<string, unknown>;
    const hostileHeaders = JSON.parse('{"__proto__":"x","a":"b"}') as Record<string, string>;
    const { headers, body } = modernRequest(
      modern(hostileHeaders),
      'c2',
      { name: 'echo', arguments: {}, _meta: hostileMeta },
      { timeoutMs: 1_000 },
      undefined,
    );
    expect(Object.getPrototypeOf(headers)).toBe(Object.prototype);
    expect(Object.keys(headers)).toContain('__proto__');
    const sent = JSON.parse(body) as { params: { _meta: Record<string, unknown> } };
    expect(Object.keys(sent.params._meta).slice(0, 2)).toEqual(['__proto__', 'k']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();

    const legacy = legacyRequest(
      { headers: hostileHeaders, sessionId: 's1', protocolVersion: '2025-11-25' } as unknown as LegacyTarget,
      'c3',
      { name: 'echo', arguments: {} },
      undefined,
    );
    expect(Object.getPrototypeOf(legacy.headers)).toBe(Object.prototype);
    expect(legacy.headers).toMatchObject({ a: 'b', 'mcp-session-id': 's1', 'mcp-protocol-version': '2025-11-25' });
  });
});
