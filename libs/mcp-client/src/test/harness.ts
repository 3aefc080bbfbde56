import { afterAll, afterEach } from 'vitest';
import { startTestMcpServer, type TestMcpServer, type TestTool } from '../../../../test/servers/index.js';
import { connectMcp, isInputRequired, type McpCallResult, type McpConnection } from '../index.js';

/**
 * What the client suites share: connections closed after each test, servers after the file, and
 * the tool results they read. Call {@link clientHarness} once at a file's top level.
 */
export interface ClientHarness {
  /** `connectMcp` with a 10 s connect bound; the connection is closed after the test. */
  connect: (opts: Parameters<typeof connectMcp>[0]) => Promise<McpConnection>;
  /** A real SDK test server, closed after the file. */
  server: (opts?: Parameters<typeof startTestMcpServer>[0]) => Promise<TestMcpServer>;
  /** Runs `close` after the file (for servers a test writes by hand). */
  closeAfterAll: (close: () => Promise<void>) => void;
}

export function clientHarness(): ClientHarness {
  const opened: McpConnection[] = [];
  const closers: Array<() => Promise<void>> = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map(async (c) => await c.close()));
  });
  afterAll(async () => {
    await Promise.all(closers.splice(0).map(async (close) => await close()));
  });
  return {
    connect: async (opts) => {
      const c = await connectMcp({ connectTimeoutMs: 10_000, ...opts });
      opened.push(c);
      return c;
    },
    server: async (opts = {}) => {
      const s = await startTestMcpServer(opts);
      closers.push(() => s.close());
      return s;
    },
    closeAfterAll: (close) => void closers.push(close),
  };
}

/** The text of a complete result (an `input_required` one fails the test). */
export function text(result: McpCallResult): string {
  if (isInputRequired(result)) throw new Error('expected a complete result');
  return result.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
}

/** The one question a `confirm` tool asks: a form with one boolean, `ok`. */
export const ASK_OK = {
  ok: {
    method: 'elicitation/create',
    params: {
      mode: 'form',
      message: 'Sure?',
      requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } } },
    },
  },
};

/** A tool that answers every call with `input_required`, asking {@link ASK_OK}; `extra` goes into the result (e.g. `requestState`). */
export function confirmTool(extra: Record<string, unknown> = {}): TestTool {
  return {
    name: 'confirm',
    handler: () => ({ resultType: 'input_required', inputRequests: ASK_OK, ...extra }) as never,
  };
}
