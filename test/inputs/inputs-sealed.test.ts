/**
 * A person's answers are sealed where they wait: the registry seals each answer with the
 * deployment's key ring (bound to the account, the input request and the question) before it goes
 * to Redis, and only the proxy opens it for the call it was asked for, as a server's requestState.
 * Read straight from Redis, the stored input request holds no answer's content; the re-sent call
 * still gets it; an answer moved to another question does not open.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InputMcpServer } from '../servers/input-mcp-server.js';
import { serviceUrls } from '../support/env.js';
import type { ProxySystem } from '../support/proxy-system.js';
import { acceptInput, askedInput, failure, startInputSystem, textOf } from './input-system.js';

describe("a person's answers are sealed in Redis", () => {
  let system: ProxySystem;
  let upstream: InputMcpServer;
  let redis: Redis;

  beforeAll(async () => {
    ({ system, upstream } = await startInputSystem());
    redis = new Redis(serviceUrls().redis);
  });
  afterAll(async () => {
    redis?.disconnect();
    await system?.stop();
    await upstream?.close();
  });

  it('the stored request holds no answer content; the re-sent call gets the answer; a moved answer does not open', async () => {
    const key = (id: string) => `${system.env.REDIS_PREFIX ?? ''}input:${system.account}:${id}`;
    const asked = await askedInput(system.call('ops-agent', 'prof-1', 'ops__profile', {}));
    const content = { email: 'sealed-person@example.com', seats: 7, admin: true, plan: 'team', features: ['audit'] };
    await system.api.act('AnswerInputRequest', { id: asked.inputRequestId, action: 'accept', content });
    const stored = (await redis.get(key(asked.inputRequestId))) ?? '';
    expect(stored).toContain(asked.inputRequestId);
    expect(stored).not.toContain('sealed-person');
    expect(stored).not.toMatch(/"accept"|"content"|example\.com/);
    const done = await system.call('ops-agent', 'prof-1', 'ops__profile', {}, { inputRequestId: asked.inputRequestId });
    expect(JSON.parse(textOf(done.result).replace(/^profile /, ''))).toEqual(content);

    // Someone with Redis write access moves an answer onto another request of the account: it
    // does not open there (bound to its request and question), and the call is refused, typed.
    const second = await askedInput(system.call('ops-agent', 'dep-1', 'ops__deploy', { env: 'prod' }));
    await acceptInput(system, second.inputRequestId, { confirm: true });
    const third = await askedInput(system.call('ops-agent', 'dep-2', 'ops__deploy', { env: 'stage' }));
    await system.api.act('AnswerInputRequest', { id: third.inputRequestId, action: 'decline' });
    const a = JSON.parse((await redis.get(key(second.inputRequestId))) ?? '{}') as { answers: Record<string, string> };
    const b = JSON.parse((await redis.get(key(third.inputRequestId))) ?? '{}') as { answers: Record<string, string> };
    b.answers = a.answers;
    await redis.set(key(third.inputRequestId), JSON.stringify(b), 'KEEPTTL');
    const calls = upstream.stats.calls;
    const refused = await failure(
      system.call('ops-agent', 'dep-2', 'ops__deploy', { env: 'stage' }, { inputRequestId: third.inputRequestId }),
    );
    expect(refused).toMatchObject({ code: 'input_refused', details: { reason: 'tampered' } });
    expect(upstream.stats.calls).toBe(calls);
  });
});
