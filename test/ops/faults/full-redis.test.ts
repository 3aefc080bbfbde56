/**
 * A full Redis: the deployments run it with `maxmemory` and `noeviction`, so once it is full every
 * write is refused (`OOM command not allowed`) and nothing it holds is evicted. Against a
 * redis-server of the test's own with a tiny maxmemory, filled up, the real services (registry,
 * projector, proxy in this process; NATS and Postgres; real MCP servers) answer:
 * - a signed action: `unavailable` (dependency redis, retryable; its nonce could not be kept);
 * - an event stream: `unavailable` at its first limit (the quotas fail closed: counting is a write);
 * - a call that stops for a human or a person (an approval, an input request to record):
 *   `unavailable`, the server not called, nothing recorded; never `internal`;
 * and once memory is freed everything works again, with nothing held before lost: the approval
 * recorded before Redis filled up is listed, decided and used.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApprovalView, WireError } from '@mcpx/contracts';
import { replyCode } from '@mcpx/shared-state';
import type { TestMcpServer } from '../../servers/index.js';
import { startInputMcpServer, type InputMcpServer } from '../../servers/input-mcp-server.js';
import type { ProxySystem } from '../../support/proxy-system.js';
import { startApprovalSystem, stoppedCall } from '../../approvals/approval-tools.js';
import { INPUT_TOOLS, failure } from '../../inputs/input-system.js';
import { openEventStream } from '../../support/fixtures/event-streams.js';
import { available, PrivateRedis } from '../support/infra.js';

const have = available();

const MAXMEMORY = 6 * 1024 * 1024;

/**
 * Fills Redis with filler values until it refuses a write, then holds it full: the refused
 * write's buffer is freed after the refusal, which would leave a few KiB of room, so maxmemory is
 * set just under what is used. Answers how many filler values were written.
 */
async function fill(redis: Redis): Promise<number> {
  const chunk = 'f'.repeat(64 * 1024);
  for (let i = 0; i < 10_000; i++) {
    try {
      await redis.set(`filler:${i}`, chunk);
    } catch (err) {
      if (replyCode(err) !== 'OOM') throw err;
      const used = Number(/used_memory:(\d+)/.exec(await redis.info('memory'))?.[1]);
      await redis.config('SET', 'maxmemory', String(used - 256 * 1024));
      return i;
    }
  }
  throw new Error('Redis never filled up');
}

function expectRedisUnavailable(err: WireError): void {
  expect(err.code, err.message).toBe('unavailable');
  expect(err.details).toMatchObject({ dependency: 'redis' });
  expect(err.retryable).toBe(true);
  expect(JSON.stringify(err.toJSON())).not.toMatch(/OOM|maxmemory|redis:\/\//);
}

describe.skipIf(!have.redis)('a full Redis (maxmemory, noeviction)', () => {
  let redis: PrivateRedis;
  let filler: Redis;
  let system: ProxySystem;
  let upstream: TestMcpServer;
  let questions: InputMcpServer;

  beforeAll(async () => {
    redis = await PrivateRedis.create(['--maxmemory', String(MAXMEMORY), '--maxmemory-policy', 'noeviction']);
    ({ system, upstream } = await startApprovalSystem({ env: { REDIS_URL: redis.url } }));
    questions = await startInputMcpServer({ era: 'modern' });
    await system.setServer('ops', questions.url);
    await system.createAgent('ops-agent', ['ops'], INPUT_TOOLS);
    filler = new Redis(redis.url);
  }, 120_000);

  afterAll(async () => {
    filler?.disconnect();
    await system?.stop();
    await upstream?.close();
    await questions?.close();
    await redis?.kill();
  });

  it('actions and calls that need a write are unavailable (typed, retryable), nothing is recorded or lost; all resumes once memory is freed', async () => {
    const held = await stoppedCall(system, 'agent', 'before', 'db__drop_table', { table: 'kept' });
    const written = await fill(filler);
    expect(written).toBeGreaterThan(0);

    // A signed action: its nonce cannot be kept, so it does not run.
    expectRedisUnavailable(await failure(system.api.act('ListApprovals')));
    // An event stream: its address's rate and stream quota cannot be counted (each is a write), so
    // it is refused at the first, typed (it used to pass both uncounted and answer `internal`).
    const stream = await openEventStream(system.api.apiUrl, system.api);
    stream.close();
    expect(stream.status, JSON.stringify(stream.body)).toBe(503);
    expect(stream.body.error).toMatchObject({ code: 'unavailable', details: { dependency: 'redis' } });
    expect(JSON.stringify(stream.body)).not.toMatch(/OOM|maxmemory|redis:\/\//);
    // A call that stops for a human: its approval cannot be recorded; the server is not called.
    const calls = upstream.stats.calls;
    expectRedisUnavailable(await system.callError('agent', 'during', 'db__drop_table', { table: 'new' }));
    expect(upstream.stats.calls).toBe(calls);
    // A call whose server asks a question: the input request cannot be recorded.
    expectRedisUnavailable(await system.callError('ops-agent', 'during-ops', 'ops__deploy', { env: 'prod' }));
    // A call that needs nothing kept: the limiter fails open (documented), it is served.
    expect((await system.call('agent', 'during-echo', 'db__echo', { text: 'still' })).result.text).toBe('echo: still');

    // Memory freed (the filler deleted: a delete is taken by a full Redis): nothing held before
    // is lost, and the refused work can be asked again.
    await filler.config('SET', 'maxmemory', String(MAXMEMORY));
    for (let i = 0; i < written; i += 500)
      await filler.del(...Array.from({ length: Math.min(500, written - i) }, (_, j) => `filler:${i + j}`));
    const { approvals } = await system.api.act<{ approvals: ApprovalView[] }>('ListApprovals');
    expect(approvals.map((a) => a.id)).toEqual([held]);
    await system.api.act('ApproveToolCall', { approvalId: held });
    expect(
      (await system.call('agent', 'before', 'db__drop_table', { table: 'kept' }, { approvalId: held })).result.text,
    ).toBe('dropped kept');
    expect(await stoppedCall(system, 'agent', 'after', 'db__drop_table', { table: 'new' })).toMatch(/^apr_/);
    expect((await system.callError('ops-agent', 'after-ops', 'ops__deploy', { env: 'prod' })).code).toBe(
      'input_required',
    );
  }, 120_000);
});
