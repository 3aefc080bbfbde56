import { describe, expect, it } from 'vitest';
import { OutboundError } from './errors.js';
import {
  LOOPBACK_POLICY,
  perTest,
  rejection,
  sendGenerated,
  sendRepeated,
  type Encoding,
} from './loopback-server.test-support.js';
import { createOutboundFetch } from './outbound-fetch.js';

const { serve, outbound } = perTest();

async function tooLarge(promise: Promise<unknown>): Promise<OutboundError> {
  const err = await rejection(promise);
  expect(err).toBeInstanceOf(OutboundError);
  expect((err as OutboundError).code).toBe('response_too_large');
  return err as OutboundError;
}

const N = 100_000;
const encodings: Encoding[] = ['identity', 'gzip', 'deflate', 'br'];

describe('bounded bodies: counted after decompression', () => {
  for (const encoding of encodings) {
    it(`${encoding}: a body of exactly the bound is read whole, one byte more is cut with the bound named`, async () => {
      const server = await serve((req, res, sent) =>
        sendGenerated(res, sent, { encoding, total: req.url === '/exact' ? N : N + 1, chunk: 7_000 }),
      );
      const f = outbound({ bounds: { maxBodyBytes: N } });
      const exact = await f(`${server.origin}/exact`);
      expect((await exact.text()).length).toBe(N);
      const over = await f(`${server.origin}/over?token=s3cret`);
      expect(over.status).toBe(200);
      const err = await tooLarge(over.text());
      expect(err.details).toEqual({ bound: { name: 'maxBodyBytes', limit: N }, origin: server.origin });
      expect(err.message).toBe(
        `response from ${server.origin} too large: more than ${N} bytes in one response body (bound maxBodyBytes = ${N} bytes)`,
      );
      expect(err.message).not.toMatch(/s3cret|token|over/);
    });
  }

  it('a gzip bomb (1 GiB inflating from about 1 MiB) is cut at 8 MiB by default and the server is made to stop', async () => {
    const GiB = 1024 * 1024 * 1024;
    const server = await serve((_req, res, sent) =>
      sendGenerated(res, sent, { encoding: 'gzip', total: GiB, fill: '\0', chunk: 1024 * 1024 }),
    );
    const cuts: OutboundError[] = [];
    const f = outbound({ onResponseCut: (e) => cuts.push(e) });
    const res = await f(`${server.origin}/mcp`, { method: 'POST', body: '{}' });
    const err = await tooLarge(res.json());
    expect(err.details.bound).toEqual({ name: 'maxBodyBytes', limit: 8 * 1024 * 1024 });
    expect(cuts).toEqual([err]);
    const sent = server.sent[0]!;
    await sent.closed;
    expect(sent.aborted).toBe(true);
    // The server was made to stop before the end. How far it got depends on the socket buffers
    // and the machine's load (a 4 MiB buffer of gzipped zeros holds about 4 GiB), so only that is checked.
    expect(sent.produced).toBeLessThan(GiB);
  });

  it('a declared Content-Length above the bound is refused without reading the body', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(10 * 1024 ** 3) });
      res.write('{"jsonrpc":"2.0"');
    });
    const f = outbound({ bounds: { maxBodyBytes: 1024 } });
    const res = await f(`${server.origin}/mcp`);
    const err = await tooLarge(res.text());
    expect(err.details).toEqual({
      bound: { name: 'maxBodyBytes', limit: 1024 },
      origin: server.origin,
      declaredBytes: 10 * 1024 ** 3,
    });
    expect(err.message).toContain(
      `a declared Content-Length of ${10 * 1024 ** 3} bytes, more than 1 KiB in one response body`,
    );
    await server.sent[0]!.closed;
    expect(server.sent[0]!.aborted).toBe(true);
  });

  it('bodies within the bounds pass unchanged: status, headers, url, error pages', async () => {
    const server = await serve((req, res) => {
      if (req.url === '/missing')
        res.writeHead(404, { 'content-type': 'text/plain', 'x-extra': 'yes' }).end('no such thing');
      else res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
    const f = outbound();
    const ok = await f(`${server.origin}/ok`);
    expect(ok.url).toBe(`${server.origin}/ok`);
    expect(await ok.json()).toEqual({ ok: true });
    const missing = await f(`${server.origin}/missing`);
    expect([missing.status, missing.statusText, missing.headers.get('x-extra'), await missing.text()]).toEqual([
      404,
      'Not Found',
      'yes',
      'no such thing',
    ]);
  });

  it('refuses bounds that are not positive integers when wiring', () => {
    expect(() => createOutboundFetch(LOOPBACK_POLICY, { bounds: { maxBodyBytes: 0 } })).toThrow(
      'outbound bound maxBodyBytes must be a positive integer number of bytes',
    );
    expect(() => createOutboundFetch(LOOPBACK_POLICY, { bounds: { maxSseEventBytes: 1.5 } })).toThrow(
      /maxSseEventBytes/,
    );
  });
});

describe('bounded event streams', () => {
  const sse = { 'content-type': 'text/event-stream' };

  it('an endless line without a newline is cut at the event bound', async () => {
    const server = await serve((_req, res, sent) => sendRepeated(res, sent, 'x', sse));
    const f = outbound({ bounds: { maxSseEventBytes: 64 * 1024 } });
    const res = await f(`${server.origin}/mcp`, { headers: { accept: 'text/event-stream' } });
    const err = await tooLarge(res.text());
    expect(err.details.bound).toEqual({ name: 'maxSseEventBytes', limit: 64 * 1024 });
    await server.sent[0]!.closed;
    expect(server.sent[0]!.aborted).toBe(true);
  });

  it('an endless stream of small events is cut at the stream bound; events of exactly the bound pass', async () => {
    const event = `data: ${'y'.repeat(999 - 7)}\n\n`;
    const server = await serve((_req, res, sent) => sendRepeated(res, sent, event, sse));
    const f = outbound({ bounds: { maxSseEventBytes: 999, maxSseStreamBytes: 1024 * 1024 } });
    const res = await f(`${server.origin}/mcp`);
    const err = await tooLarge(res.text());
    expect(err.details.bound).toEqual({ name: 'maxSseStreamBytes', limit: 1024 * 1024 });
  });

  it('an endless stream of tiny events is cut at the event count, 2000 by default', async () => {
    const server = await serve((_req, res, sent) => sendRepeated(res, sent, 'data: {}\n\n', sse));
    const err = await tooLarge((await outbound()(`${server.origin}/mcp`)).text());
    expect(err.details.bound).toEqual({ name: 'maxSseEvents', limit: 2000 });
    expect(err.message).toBe(
      `response from ${server.origin} too large: more than 2000 events on one event stream (bound maxSseEvents = 2000)`,
    );
  });

  it("a cut stream answering a POST ends with a JSON-RPC error for each of the POST's requests, naming the bound", async () => {
    const server = await serve((_req, res, sent) => {
      res.writeHead(200, sse);
      res.write('event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{}}\n\n');
      sendRepeated(res, sent, 'z', null);
    });
    const f = outbound({ bounds: { maxSseEventBytes: 4096 } });
    const body = JSON.stringify([
      { jsonrpc: '2.0', id: 7, method: 'tools/list', params: {} },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 'b', method: 'tools/call', params: {} },
    ]);
    const res = await f(`${server.origin}/mcp`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json' },
    });
    const text = await res.text();
    const events = text.split('\n\n').filter((e) => e.startsWith('event: message\ndata: {"jsonrpc":"2.0","id"'));
    const answers = events.map(
      (e) =>
        JSON.parse(e.slice('event: message\ndata: '.length)) as {
          id: unknown;
          error: { code: number; message: string; data: unknown };
        },
    );
    expect(answers.map((a) => a.id)).toEqual([7, 'b']);
    expect(answers[0]!.error.code).toBe(-32000);
    expect(answers[0]!.error.message).toBe(
      `response from ${server.origin} too large: more than 4 KiB in one event of an event stream (bound maxSseEventBytes = 4096 bytes)`,
    );
    expect(answers[0]!.error.data).toEqual({
      code: 'response_too_large',
      bound: { name: 'maxSseEventBytes', limit: 4096 },
    });
    // The stand-ins begin on a blank line (ending any cut partial event) and end the stream.
    const start = text.indexOf('\n\nevent: message\ndata: {"jsonrpc":"2.0","id":7');
    expect(start).toBeGreaterThanOrEqual(0);
    expect(
      text
        .slice(start)
        .split('\n\n')
        .filter((e) => e !== ''),
    ).toHaveLength(2);
  });
});

describe('bounded bodies on the request path', () => {
  const text = async (body: NodeJS.ReadableStream): Promise<string> => {
    let s = '';
    for await (const chunk of body) s += String(chunk);
    return s;
  };

  it('counts the bytes as received (no decompression there): exact passes, one more is cut', async () => {
    const server = await serve((req, res, sent) =>
      sendGenerated(res, sent, { encoding: 'identity', total: req.url === '/exact' ? N : N + 1, chunk: 9_000 }),
    );
    const f = outbound({ bounds: { maxBodyBytes: N } });
    const exact = await f.request(new URL(`${server.origin}/exact`), { method: 'POST', headers: {}, body: '{}' });
    expect((await text(exact.body)).length).toBe(N);
    const over = await f.request(new URL(`${server.origin}/over`), { method: 'POST', headers: {}, body: '{}' });
    const err = await tooLarge(text(over.body));
    expect(err.details).toEqual({ bound: { name: 'maxBodyBytes', limit: N }, origin: server.origin });
  });

  it('refuses a declared Content-Length and an endless event line', async () => {
    const server = await serve((req, res, sent) => {
      if (req.url === '/declared')
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '999999999' }).write('{');
      else sendRepeated(res, sent, 'x', sse);
    });
    const sse = { 'content-type': 'text/event-stream' };
    const cuts: string[] = [];
    const f = outbound({
      bounds: { maxBodyBytes: 1000, maxSseEventBytes: 50_000 },
      onResponseCut: (e) => cuts.push(e.details.bound.name),
    });
    const declared = await f.request(new URL(`${server.origin}/declared`), { method: 'POST', headers: {}, body: '{}' });
    expect((await tooLarge(text(declared.body))).details.declaredBytes).toBe(999999999);
    const endless = await f.request(new URL(`${server.origin}/sse`), { method: 'POST', headers: {}, body: '{}' });
    expect((await tooLarge(text(endless.body))).details.bound.name).toBe('maxSseEventBytes');
    expect(cuts).toEqual(['maxBodyBytes', 'maxSseEventBytes']);
  });
});
