import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { validateHostHeader } from '@modelcontextprotocol/server';
import { checkHost, requestHead } from './request-head.js';

function req(url: string, host = 'localhost:8080'): IncomingMessage {
  return { method: 'POST', url, headers: { host } } as unknown as IncomingMessage;
}

describe("the gate's request head", () => {
  // Targets a URL's parser gives back as they are, and those it resolves or escapes: the head's
  // path is the parsed URL's pathname for every one of them.
  const targets = [
    '/v1/agents/ops/mcp',
    '/v1/agents/ops/mcp?compact=1',
    '/v1/agents/ops/servers/db/mcp/',
    '/v1/agents/a%20b/mcp',
    "/v1/agents/o'p(s)~!$&*+,;=:@/mcp",
    '/v1/agents/../healthz',
    '/v1/agents/./ops/mcp',
    '/v1/agents/%2e%2e/ops/mcp',
    '/v1/agents/%2E/ops/mcp',
    '/v1/agents/.hidden/mcp',
    '/v1/agents/ops\\mcp',
    '/v1/agents/o ps/mcp',
    '/v1/agents/o"ps/mcp',
    '/v1/agents/ö/mcp',
    '/v1/agents/{x}/mcp',
    '/v1/agents/ops/mcp#frag',
    '//v1/agents/ops/mcp',
    '/healthz',
    '/',
  ];
  it.each(targets)('reads %s as the URL parser does', (target) => {
    const head = requestHead(req(target));
    expect(head.path).toBe(new URL(`http://localhost:8080${target}`).pathname);
    expect(head.url.href).toBe(new URL(`http://localhost:8080${target}`).href);
  });

  it('gives repeated headers joined as web Headers does, and null for an absent one', () => {
    const head = requestHead({
      method: 'GET',
      url: '/',
      headers: { host: 'h', accept: 'a', 'x-many': ['1', '2'] },
    } as unknown as IncomingMessage);
    expect([head.method, head.header('accept'), head.header('x-many'), head.header('origin')]).toEqual([
      'GET',
      'a',
      '1, 2',
      null,
    ]);
  });
});

describe('checkHost', () => {
  const allowed = ['localhost', '127.0.0.1'];
  const hosts = [
    'localhost',
    'localhost:8080',
    '127.0.0.1:1',
    'evil.example',
    'evil.example:8080',
    'localhost.evil.example',
    '',
    '[::1]:80',
  ];
  it("says what the SDK's check says, the first time and every time after", () => {
    for (let round = 0; round < 3; round++)
      for (const host of [...hosts, null])
        expect(checkHost(host, allowed).ok, `${host} round ${round}`).toBe(validateHostHeader(host, allowed).ok);
  });

  it('keeps each allow-list apart', () => {
    expect(checkHost('localhost:1', ['localhost']).ok).toBe(true);
    expect(checkHost('localhost:1', ['example.com']).ok).toBe(false);
  });
});
