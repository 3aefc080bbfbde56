import { describe, expect, it } from 'vitest';
import { budgetedFetch } from './budgeted-fetch.js';
import { OutboundError } from './errors.js';
import { perTest, rejection, sendGenerated } from './loopback-server.test-support.js';

const { serve, outbound, cleanups } = perTest();

async function outboundError(promise: Promise<unknown>): Promise<OutboundError> {
  const err = await rejection(promise);
  expect(err).toBeInstanceOf(OutboundError);
  return err as OutboundError;
}

describe('budgetedFetch', () => {
  it('counts every body against one total: gzip bodies by their decompressed bytes', async () => {
    const server = await serve((_req, res, sent) => sendGenerated(res, sent, { encoding: 'gzip', total: 600_000 }));
    const cuts: string[] = [];
    const f = budgetedFetch(outbound(), { maxTotalBytes: 1_000_000, onCut: (e) => cuts.push(e.details.bound.name) });
    cleanups.push(() => f.end());
    expect((await (await f(`${server.origin}/a`)).text()).length).toBe(600_000);
    const err = await outboundError((await f(`${server.origin}/b`)).text());
    expect(err.code).toBe('response_too_large');
    expect(err.details).toEqual({ bound: { name: 'maxTotalBytes', limit: 1_000_000 }, origin: server.origin });
    expect(err.message).toContain('over all the responses of this exchange');
    expect(cuts).toEqual(['maxTotalBytes']);
    expect(f.budget.spent).toBeGreaterThan(1_000_000);
  });

  it('is a fetch only: the base’s request function is not carried over', () => {
    const f = budgetedFetch(outbound(), { maxTotalBytes: 1_000 });
    cleanups.push(() => f.end());
    expect('request' in f).toBe(false);
  });

  it('at the deadline cuts open streams (a POST stream ends with stand-in answers) and refuses new requests', async () => {
    // A server that drips: one event, then nothing (a slowloris within every byte bound).
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': still here\n\n');
    });
    const f = budgetedFetch(outbound(), { maxTotalBytes: 1_000_000, deadlineMs: 300 });
    cleanups.push(() => f.end());
    const get = await f(`${server.origin}/mcp`, { headers: { accept: 'text/event-stream' } });
    const post = await f(`${server.origin}/mcp`, {
      method: 'POST',
      body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/list' }),
    });
    const getErr = await outboundError(get.text());
    expect(getErr.code).toBe('deadline_exceeded');
    expect(getErr.details).toEqual({ bound: { name: 'deadlineMs', limit: 300 }, origin: server.origin });
    const postText = await post.text();
    expect(postText).toContain('"id":3,"error":{"code":-32000,"message":"exchange with');
    expect(postText).toContain('"data":{"code":"deadline_exceeded","bound":{"name":"deadlineMs","limit":300}}');
    expect((await outboundError(f(`${server.origin}/mcp`))).code).toBe('deadline_exceeded');
    await Promise.all(server.sent.map((s) => s.closed));
    expect(server.sent.every((s) => s.aborted)).toBe(true);
  });

  it('a request whose answer never starts fails at the deadline, naming it', async () => {
    // Headers never come: a server that accepts the request and then says nothing.
    const server = await serve(() => undefined);
    const f = budgetedFetch(outbound(), { maxTotalBytes: 1_000, deadlineMs: 200 });
    cleanups.push(() => f.end());
    const err = await outboundError(f(`${server.origin}/mcp`, { method: 'POST', body: '{}' }));
    expect(err.code).toBe('deadline_exceeded');
    expect(err.message).toBe(`exchange with ${server.origin} passed its total deadline of 200 ms (bound deadlineMs)`);
  });

  it('refuses a budget or deadline that is not a positive integer', () => {
    expect(() => budgetedFetch(fetch, { maxTotalBytes: -1 })).toThrow(/maxTotalBytes/);
    expect(() => budgetedFetch(fetch, { maxTotalBytes: 10, deadlineMs: 0 })).toThrow(/deadlineMs/);
  });
});
