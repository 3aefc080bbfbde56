import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { InputStore, type InputCreate } from './input-store.js';

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const TTL_MS = 60_000;

function storeAt(redis: Redis): { store: InputStore; clock: { now: number } } {
  const clock = { now: 1_700_000_000_000 };
  return { store: new InputStore(redis, `mcpx-t${randomBytes(4).toString('hex')}:`, { ttlMs: TTL_MS, now: () => clock.now }), clock };
}

const binding = { agent: 'ag', run: 'r1', tool: 'ops__deploy', argsHash: 'a'.repeat(64) };
const base = (personKeys: string[]): InputCreate => ({
  ...binding,
  account: 'acct',
  server: 'ops',
  remoteName: 'deploy',
  round: 1,
  era: 'modern',
  approved: false,
  requestsJson: JSON.stringify([
    {
      key: 'confirm',
      kind: 'form',
      answerBy: 'person',
      message: 'Deploy?',
      requestedSchema: { type: 'object', properties: { tags: { type: 'array', items: { type: 'string', enum: [] } } }, required: [] },
    },
  ]),
  personKeys,
  sealedState: 'k1.AAAA',
});

describe('InputStore (real Redis)', () => {
  const redis = new Redis(redisUrl);
  afterAll(async () => {
    await redis.quit();
  });

  it('lists a pending request, takes each question once, completes with the last, and is used once for its own call', async () => {
    const { store, clock } = storeAt(redis);
    const r = await store.create(base(['confirm', 'region']));
    expect((await store.listPending('acct')).map((x) => x.id)).toEqual([r.id]);
    expect(await store.consume('acct', r.id, binding)).toMatchObject({ ok: false, reason: 'pending' });

    const first = await store.answer('acct', r.id, 'confirm', '{"action":"accept","content":{"confirm":true,"tags":[]}}', 'owner');
    expect(first).toMatchObject({ ok: true, complete: false });
    expect(await store.answer('acct', r.id, 'confirm', '{"action":"decline"}', 'owner')).toMatchObject({ ok: false, reason: 'answered_already' });
    expect(await store.answer('acct', r.id, 'nope', '{"action":"decline"}', 'owner')).toMatchObject({ ok: false, reason: 'not_asked' });
    clock.now += 1_000;
    const done = await store.answer('acct', r.id, 'region', '{"action":"accept","content":{"region":"eu"}}', 'owner');
    expect(done).toMatchObject({ ok: true, complete: true });
    if (!done.ok) throw new Error('unreachable');
    expect(done.record.expiresAt).toBe(clock.now + TTL_MS);
    expect(await store.listPending('acct')).toEqual([]);

    // The stored strings come back byte for byte (no script re-encodes them: an empty list stays a list).
    const got = await store.get('acct', r.id);
    expect(got?.requestsJson).toBe(base([]).requestsJson);
    expect(got?.answers.confirm).toBe('{"action":"accept","content":{"confirm":true,"tags":[]}}');
    expect(got?.sealedState).toBe('k1.AAAA');

    expect(await store.consume('acct', r.id, { ...binding, argsHash: 'b'.repeat(64) })).toMatchObject({ ok: false, reason: 'mismatch' });
    expect(await store.consume('acct', r.id, { ...binding, run: 'r2' })).toMatchObject({ ok: false, reason: 'mismatch' });
    expect(await store.consume('acct', r.id, binding)).toMatchObject({ ok: true });
    expect(await store.consume('acct', r.id, binding)).toMatchObject({ ok: false, reason: 'used' });
    expect(await store.consume('other', r.id, binding)).toMatchObject({ ok: false, reason: 'unknown' });
  });

  it('expires: an unanswered request cannot be answered after its TTL, an answered one cannot be used after its window', async () => {
    const { store, clock } = storeAt(redis);
    const r = await store.create(base(['confirm']));
    clock.now = r.expiresAt;
    expect(await store.answer('acct', r.id, 'confirm', '{"action":"accept"}', 'owner')).toMatchObject({ ok: false, reason: 'expired' });
    expect(await store.listPending('acct')).toEqual([]);

    const s = await store.create(base(['confirm']));
    const a = await store.answer('acct', s.id, 'confirm', '{"action":"accept"}', 'owner');
    if (!a.ok) throw new Error('expected an answer');
    clock.now = a.record.expiresAt;
    expect(await store.consume('acct', s.id, binding)).toMatchObject({ ok: false, reason: 'expired' });
  });

  it('a request only the runtime answers is answered at once and never listed', async () => {
    const { store } = storeAt(redis);
    const r = await store.create(base([]));
    expect(r.status).toBe('answered');
    expect(await store.listPending('acct')).toEqual([]);
    expect(await store.consume('acct', r.id, binding)).toMatchObject({ ok: true });
  });
});

describe('InputStore.countPending: input requests waiting across accounts (real Redis)', () => {
  const redis = new Redis(redisUrl);
  afterAll(async () => {
    await redis.quit();
  });

  it('counts pending requests of every account; the last answer or the deadline takes one off; a runtime-only one never counts', async () => {
    const { store, clock } = storeAt(redis);
    const r = await store.create(base(['confirm']));
    await store.create({ ...base(['confirm']), account: 'other' });
    await store.create(base([]));
    expect(await store.countPending()).toBe(2);
    expect((await store.answer('acct', r.id, 'confirm', '{"action":"accept"}', 'owner')).ok).toBe(true);
    expect(await store.countPending()).toBe(1);
    clock.now += TTL_MS + 1;
    expect(await store.countPending()).toBe(0);
  });
});
