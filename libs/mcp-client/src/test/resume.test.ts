import { afterEach, describe, expect, it } from 'vitest';
import { connectMcp, isInputRequired, McpClientError, type McpCallResult, type McpConnection } from '../index.js';
import { RESUME_MAX_STALLED } from '../sse-resume.js';
import {
  nodeRequest,
  primed,
  startResumableServer,
  type ResumableServer,
  type ResumableServerOptions,
} from './resumable-server.js';

const opened: McpConnection[] = [];
const servers: ResumableServer[] = [];

afterEach(async () => {
  await Promise.all(opened.splice(0).map(async (c) => await c.close()));
  await Promise.all(servers.splice(0).map(async (s) => await s.close()));
});

/** The legacy direct call path has two ways to the wire: the fetch (adapted), or an explicit `request` (the proxy's). */
const PATHS = ['fetch', 'request'] as const;
type Path = (typeof PATHS)[number];

async function setup(path: Path, opts: ResumableServerOptions): Promise<{ s: ResumableServer; c: McpConnection }> {
  const s = await startResumableServer(opts);
  servers.push(s);
  const c = await connectMcp({
    url: s.url,
    transport: 'http',
    connectTimeoutMs: 10_000,
    ...(path === 'request' ? { request: nodeRequest() } : {}),
  });
  opened.push(c);
  return { s, c };
}

function text(result: McpCallResult): string {
  if (isInputRequired(result)) throw new Error('expected a complete result');
  return result.content
    .map((c) => ((c as { type: string }).type === 'text' ? (c as { text: string }).text : ''))
    .join('');
}

async function failure(promise: Promise<unknown>): Promise<McpClientError> {
  const error: unknown = await promise.then(
    () => new Error('expected the call to fail'),
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(McpClientError);
  return error as McpClientError;
}

async function waitFor(condition: () => boolean, ms = 5_000): Promise<void> {
  const endsAt = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > endsAt) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe.each(PATHS)('a tools/call response stream that breaks (%s path)', (path) => {
  it('is resumed with a GET carrying Last-Event-ID after a dropped connection, and the call returns its result', async () => {
    // The connection drops in the middle of a third event: an unfinished event does not count.
    const { s, c } = await setup(path, {
      breakWith: 'drop',
      before: `${primed()}id: ev-9\ndata: {"jsonrpc":"2.0","id":{id},"res`,
    });
    const result = await c.callTool({ name: 'echo', arguments: { text: 'hi' } });
    expect(text(result)).toBe('echo: hi');
    expect(s.broken).toBe(1);
    expect(s.resumptions).toHaveLength(1);
    const get = s.resumptions[0]!;
    expect(get['last-event-id']).toBe('ev-2');
    expect(get['mcp-session-id']).toBe(s.sessionId);
    expect(get['mcp-protocol-version']).toBe('2025-11-25');
    expect(get.accept).toBe('text/event-stream');
    // The session goes on.
    expect(text(await c.callTool({ name: 'echo', arguments: { text: 'again' } }))).toBe('echo: again');
    expect(s.resumptions).toHaveLength(2);
  });

  it('is resumed when the server ends it gracefully after a priming event', async () => {
    const { s, c } = await setup(path, { breakWith: 'end', before: 'id: only\nretry: 0\ndata: \n\n' });
    expect(text(await c.callTool({ name: 'echo', arguments: { text: 'graceful' } }))).toBe('echo: graceful');
    expect(s.resumptions.map((h) => h['last-event-id'])).toEqual(['only']);
  });

  it('fails at once with a typed transport_error when no event carried an id', async () => {
    const before =
      'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}\n\n';
    for (const breakWith of ['drop', 'end'] as const) {
      const { s, c } = await setup(path, { breakWith, before });
      const e = await failure(c.callTool({ name: 'echo', arguments: { text: 'x' } }));
      expect(e).toMatchObject({ code: 'transport_error', retryable: false });
      expect(e.message).toMatch(/may have executed/);
      expect(s.resumptions).toEqual([]);
    }
  });

  it('fails with transport_error (status 405, not retryable) when the server refuses the resumption GET', async () => {
    const { s, c } = await setup(path, { resume: 405 });
    const e = await failure(c.callTool({ name: 'echo', arguments: { text: 'x' } }));
    expect(e).toMatchObject({ code: 'transport_error', retryable: false, status: 405 });
    expect(e.message).toContain('HTTP 405');
    expect(e.message).toMatch(/could not be resumed/);
    expect(s.resumptions.map((h) => h['last-event-id'])).toEqual(['ev-2']);
  });

  it(`gives up after ${RESUME_MAX_STALLED} resumptions in a row that bring nothing`, async () => {
    const { s, c } = await setup(path, { before: primed(0), resume: 'empty' });
    const e = await failure(c.callTool({ name: 'echo', arguments: { text: 'x' } }));
    expect(e).toMatchObject({ code: 'transport_error', retryable: false });
    expect(e.message).toContain(`${RESUME_MAX_STALLED} resumptions with Last-Event-ID did not deliver it`);
    expect(s.resumptions.map((h) => h['last-event-id'])).toEqual(Array<string>(RESUME_MAX_STALLED).fill('ev-2'));
  });

  it("stays within the call's timeout: while waiting for the retry, and on a silent resumed stream", async () => {
    // A retry far longer than the call's timeout.
    const waiting = await setup(path, { before: primed(600_000) });
    // Timeouts long enough for a loaded machine to get the resumption out before they fire.
    const e1 = await failure(waiting.c.callTool({ name: 'echo', arguments: { text: 'x' } }, { timeoutMs: 1_500 }));
    expect(e1.code).toBe('timeout');
    expect(waiting.s.resumptions).toEqual([]);

    const silent = await setup(path, { before: primed(0), resume: 'hold' });
    const e2 = await failure(silent.c.callTool({ name: 'echo', arguments: { text: 'x' } }, { timeoutMs: 1_500 }));
    expect(e2.code).toBe('timeout');
    expect(silent.s.resumptions).toHaveLength(1);
  });

  it('reports a cancel during the wait as cancelled', async () => {
    const { s, c } = await setup(path, { before: primed(600_000) });
    const controller = new AbortController();
    const call = failure(c.callTool({ name: 'echo', arguments: { text: 'x' } }, { signal: controller.signal }));
    await waitFor(() => s.broken === 1);
    controller.abort();
    expect((await call).code).toBe('cancelled');
    expect(s.resumptions).toEqual([]);
  });
});

describe('the SDK request path (tools/list, as discovery uses it)', () => {
  it('is resumed by the SDK with Last-Event-ID through the connection fetch', async () => {
    const { s, c } = await setup('fetch', { breakOn: 'tools/list' });
    expect((await c.listTools({ timeoutMs: 10_000 })).map((t) => t.name)).toEqual(['echo']);
    expect(s.resumptions.map((h) => h['last-event-id'])).toEqual(['ev-2']);
    expect(s.resumptions[0]!['mcp-session-id']).toBe(s.sessionId);
  });
});
