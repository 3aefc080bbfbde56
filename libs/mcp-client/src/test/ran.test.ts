import { afterEach, describe, expect, it } from 'vitest';
import { freshSocketRequest } from './fresh-socket.js';
import { holdTool, startTestMcpServer, type HeldCalls, type TestMcpServer } from '../../../../test/servers/index.js';
import { connectMcp, McpClientError, type McpConnection } from '../index.js';

/**
 * What a failed call may have run is the client's word, set where it knows (`McpClientError.ran`),
 * never read back from a message: against real SDK servers on loopback (the modern v2 server and
 * the legacy v1 one), a call whose server drops its connection while the tool runs may have run
 * (`maybe`); a call to a server that no longer listens (the connect is refused) ran nothing
 * (`none`).
 */

const opened: McpConnection[] = [];
const servers: TestMcpServer[] = [];

afterEach(async () => {
  await Promise.all(opened.splice(0).map(async (c) => await c.close()));
  await Promise.all(servers.splice(0).map(async (s) => await s.close()));
});

async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1_000; i++) {
    if (cond()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function failure(call: Promise<unknown>): Promise<McpClientError> {
  const err: unknown = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(McpClientError);
  return err as McpClientError;
}

describe.each(['modern', 'legacy'] as const)('what ran, %s server', (era) => {
  it('a connection dropped while the tool runs may have run; a refused connect ran nothing', async () => {
    const seen: HeldCalls = new Map();
    const server = await startTestMcpServer({ era, tools: [holdTool(seen)] });
    servers.push(server);
    const conn = await connectMcp({ url: server.url, connectTimeoutMs: 10_000, request: freshSocketRequest });
    expect(conn.era).toBe(era);
    opened.push(conn);

    const pending = failure(conn.callTool({ name: 'hold', arguments: { tag: 'dropped' } }, { timeoutMs: 30_000 }));
    await until(() => seen.get('dropped')?.started === true, 'the tool to start');
    // The server goes away with the call running: every socket destroyed, the listener closed.
    await server.close();
    const dropped = await pending;
    expect(dropped.ran).toBe('maybe');
    expect(dropped.retryable).toBe(false);
    expect(server.stats.calls).toBe(1);

    // Nothing listens on the port any more: the request cannot have reached a server.
    const refused = await failure(
      conn.callTool({ name: 'hold', arguments: { tag: 'refused' } }, { timeoutMs: 30_000 }),
    );
    expect(refused.ran).toBe('none');
    expect(refused.code).not.toBe('maybe_executed');
    expect(seen.has('refused')).toBe(false);
  });
});
