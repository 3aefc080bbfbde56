import { describe, expect, it } from 'vitest';
import { echoTool, holdTool, type HeldCalls } from '../../../../test/servers/index.js';
import { McpClientError, type McpConnection } from '../index.js';
import { clientHarness, text } from './harness.js';

const { server, connect } = clientHarness();

/**
 * Far beyond the test's own timeout: a call still waiting when the stream ended was not failed
 * at the end (on a session whose stream is gone, it would wait for this).
 */
const CALL_TIMEOUT_MS = 90_000;
/** The test's bound: well under the call's timeout and the held calls' answer (a minute). */
const TEST_TIMEOUT_MS = 20_000;

async function until(condition: () => boolean, ms = 5_000): Promise<void> {
  const endsAt = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > endsAt) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** What `promise` failed with (the test fails if it was answered). */
async function failure(promise: Promise<unknown>): Promise<McpClientError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(McpClientError);
  return err as McpClientError;
}

/** Two `hold` calls on `c` that the server has started (their answers are a minute away). */
async function twoHeld(c: McpConnection, held: HeldCalls, tag: string): Promise<Array<Promise<McpClientError>>> {
  const calls = ['a', 'b'].map((n) =>
    failure(c.callTool({ name: 'hold', arguments: { tag: `${tag}-${n}` } }, { timeoutMs: CALL_TIMEOUT_MS })),
  );
  await until(() => held.get(`${tag}-a`)?.started === true && held.get(`${tag}-b`)?.started === true);
  return calls;
}

/**
 * A fetch whose GET event streams fail, as the connector's outbound bounds fail a body, once
 * they carried more than `limit` bytes: an error with code `response_too_large` naming the bound.
 */
function boundedFetch(limit: number): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    if ((init?.method ?? 'GET') !== 'GET' || response.body === null) return response;
    const cut = Object.assign(
      new Error(`response from the server too large (bound maxSseEventBytes = ${limit} bytes)`),
      { code: 'response_too_large', details: { bound: { name: 'maxSseEventBytes', limit } } },
    );
    let seen = 0;
    const body = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          seen += chunk.byteLength;
          if (seen > limit) controller.error(cut);
          else controller.enqueue(chunk);
        },
      }),
    );
    return new Response(body, { status: response.status, headers: response.headers });
  };
}

/**
 * On the legacy HTTP+SSE transport (2024-11-05) every answer comes on the session's event stream,
 * and an SDK server's session is that stream. When it ends after the session started, whatever
 * ended it (the server closed it, its socket was reset, the server died), every call waiting on
 * the session fails at once as `transport_error` that may have run (`ran: maybe`), not at its
 * timeout; the connection is closed, so a call after it fails as not sent, and a new connection
 * gets a fresh session.
 */
describe('a legacy SSE session whose event stream ends', () => {
  it.each([
    ['end', /event stream was closed by the server/],
    ['reset', /event stream broke, .*: .+/],
  ] as const)(
    'the server %ss it: the waiting calls fail at once, maybe run; the next call is not sent',
    async (how, said) => {
      const held: HeldCalls = new Map();
      const s = await server({ era: 'legacy', transport: 'sse', tools: [holdTool(held), echoTool()] });
      const c = await connect({ url: s.url, transport: 'sse' });
      const calls = await twoHeld(c, held, how);
      expect(s.breakSseStreams(how)).toBe(1);

      for (const err of await Promise.all(calls)) {
        expect(err.code).toBe('transport_error');
        expect(err.ran).toBe('maybe');
        expect(err.message).toMatch(said);
      }
      expect(c.closed).toBe(true);
      const after = await failure(c.callTool({ name: 'echo', arguments: { text: 'after' } }));
      expect(after.code).toBe('transport_error');
      expect(after.ran).toBe('none');

      const fresh = await connect({ url: s.url, transport: 'sse' });
      expect(text(await fresh.callTool({ name: 'echo', arguments: { text: 'fresh' } }))).toBe('echo: fresh');
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'the server dies (every session and socket closed): the waiting calls fail at once',
    async () => {
      const held: HeldCalls = new Map();
      const s = await server({ era: 'legacy', transport: 'sse', tools: [holdTool(held), echoTool()] });
      const c = await connect({ url: s.url, transport: 'sse' });
      const calls = await twoHeld(c, held, 'dies');
      await s.close();

      for (const err of await Promise.all(calls)) {
        expect(err.code).toBe('transport_error');
        expect(err.ran).toBe('maybe');
      }
      expect(c.closed).toBe(true);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'a listing whose answer was cut at a bound names the bound, and so does a relayed listing',
    async () => {
      const limit = 64 * 1024;
      const huge = { ...echoTool(), name: 'huge', description: 'x'.repeat(2 * limit) };
      const s = await server({ era: 'legacy', transport: 'sse', tools: [echoTool(), huge] });
      const listing = await connect({ url: s.url, transport: 'sse', fetch: boundedFetch(limit) });
      const listed = await failure(listing.listTools({ timeoutMs: CALL_TIMEOUT_MS }));
      expect(listed.code).toBe('transport_error');
      expect(listed.ran).toBe('maybe');
      expect(listed.message).toMatch(/event stream was cut, .*\(bound maxSseEventBytes = 65536 bytes\)/);
      expect(listed.details.bound).toEqual({ name: 'maxSseEventBytes', limit });

      const p = await server({
        era: 'legacy',
        transport: 'sse',
        prompts: [{ name: 'huge', description: 'x'.repeat(2 * limit) }],
      });
      const relaying = await connect({ url: p.url, transport: 'sse', fetch: boundedFetch(limit) });
      const relayed = await failure(relaying.relay('prompts/list', {}, { timeoutMs: CALL_TIMEOUT_MS }));
      expect(relayed.message).toMatch(/\(bound maxSseEventBytes = 65536 bytes\)/);
      expect(relayed.details.bound).toEqual({ name: 'maxSseEventBytes', limit });
    },
    TEST_TIMEOUT_MS,
  );
});
