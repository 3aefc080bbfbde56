import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { keysUnder, race, suiteRedis, testClock } from './redis-keys.test-support.js';
import { InputStore, PendingInputsFullError, type AnswerSealer, type InputCreate } from './input-store.js';

const TTL_MS = 60_000;

/** AES-256-GCM with one key, the shape of the deployment's SecretBox (the services pass theirs). */
function sealer(key = randomBytes(32)): AnswerSealer {
  return {
    seal(plaintext, aad) {
      const iv = randomBytes(12);
      const c = createCipheriv('aes-256-gcm', key, iv).setAAD(Buffer.from(aad));
      const body = Buffer.concat([c.update(plaintext, 'utf8'), c.final()]);
      return { keyId: 't', ciphertext: Buffer.concat([iv, body, c.getAuthTag()]) };
    },
    open(sealed, aad) {
      const buf = Buffer.from(sealed.ciphertext);
      const d = createDecipheriv('aes-256-gcm', key, buf.subarray(0, 12)).setAAD(Buffer.from(aad));
      d.setAuthTag(buf.subarray(buf.length - 16));
      return Buffer.concat([d.update(buf.subarray(12, buf.length - 16)), d.final()]).toString('utf8');
    },
  };
}

function storeAt(redis: Redis): { store: InputStore; clock: { now: number }; prefix: string } {
  const { clock, prefix } = testClock();
  return {
    store: new InputStore(redis, prefix, { box: sealer(), ttlMs: TTL_MS, now: () => clock.now }),
    clock,
    prefix,
  };
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
      requestedSchema: {
        type: 'object',
        properties: { tags: { type: 'array', items: { type: 'string', enum: [] } } },
        required: [],
      },
    },
  ]),
  personKeys,
  sealedState: 'k1.AAAA',
});

describe('InputStore (real Redis)', () => {
  const redis = suiteRedis();

  it('lists a pending request, takes each question once, completes with the last, and is used once for its own call', async () => {
    const { store, clock, prefix } = storeAt(redis);
    const r = await store.create(base(['confirm', 'region']));
    expect((await store.listPending('acct')).map((x) => x.id)).toEqual([r.id]);
    expect(await store.consume('acct', r.id, binding)).toMatchObject({ ok: false, reason: 'pending' });

    const first = await store.answer(
      'acct',
      r.id,
      'confirm',
      '{"action":"accept","content":{"confirm":true,"tags":[]}}',
      'owner',
    );
    expect(first).toMatchObject({ ok: true, complete: false });
    expect(await store.answer('acct', r.id, 'confirm', '{"action":"decline"}', 'owner')).toMatchObject({
      ok: false,
      reason: 'answered_already',
    });
    expect(await store.answer('acct', r.id, 'nope', '{"action":"decline"}', 'owner')).toMatchObject({
      ok: false,
      reason: 'not_asked',
    });
    clock.now += 1_000;
    const done = await store.answer('acct', r.id, 'region', '{"action":"accept","content":{"region":"eu"}}', 'owner');
    expect(done).toMatchObject({ ok: true, complete: true });
    if (!done.ok) throw new Error('unreachable');
    expect(done.record.expiresAt).toBe(clock.now + TTL_MS);
    expect(await store.listPending('acct')).toEqual([]);

    // The stored strings come back byte for byte (no script re-encodes them: an empty list stays a list).
    const got = await store.get('acct', r.id);
    expect(got?.requestsJson).toBe(base([]).requestsJson);
    expect(store.openAnswer(got!, 'confirm')).toBe('{"action":"accept","content":{"confirm":true,"tags":[]}}');
    // Sealed where it is kept: the stored record holds no answer's content.
    const stored = (await redis.get(`${prefix}input:acct:${r.id}`)) ?? '';
    expect(stored).toContain('"confirm"');
    expect(stored).not.toContain('content');
    expect(stored).not.toContain('accept');
    // Bound to its request and question: an answer moved to another question does not open.
    expect(() => store.openAnswer({ ...got!, answers: { region: got!.answers.confirm! } }, 'region')).toThrow();
    expect(got?.sealedState).toBe('k1.AAAA');

    expect(await store.consume('acct', r.id, { ...binding, argsHash: 'b'.repeat(64) })).toMatchObject({
      ok: false,
      reason: 'mismatch',
    });
    expect(await store.consume('acct', r.id, { ...binding, run: 'r2' })).toMatchObject({
      ok: false,
      reason: 'mismatch',
    });
    expect(await store.consume('acct', r.id, binding)).toMatchObject({ ok: true });
    expect(await store.consume('acct', r.id, binding)).toMatchObject({ ok: false, reason: 'used' });
    expect(await store.consume('other', r.id, binding)).toMatchObject({ ok: false, reason: 'unknown' });
  });

  it('an answer that expects the record as it was read is refused, taking nothing, once another answer came', async () => {
    const { store } = storeAt(redis);
    const r = await store.create(base(['confirm', 'region']));
    const read = await store.get('acct', r.id);
    expect(read?.remaining).toBe(2);
    // Another answer comes between the read and this one: this one would now complete the request.
    expect(await store.answer('acct', r.id, 'region', '{"action":"decline"}', 'runtime')).toMatchObject({
      ok: true,
      complete: false,
    });
    expect(
      await store.answer('acct', r.id, 'confirm', '{"action":"decline"}', 'owner', { remaining: read!.remaining }),
    ).toMatchObject({ ok: false, reason: 'changed' });
    expect((await store.get('acct', r.id))?.answers).not.toHaveProperty('confirm');
    // Read again, it is taken, and completes as the new read says.
    const again = await store.get('acct', r.id);
    expect(
      await store.answer('acct', r.id, 'confirm', '{"action":"decline"}', 'owner', { remaining: again!.remaining }),
    ).toMatchObject({ ok: true, complete: true });
  });

  it('expires: an unanswered request cannot be answered after its TTL, an answered one cannot be used after its window', async () => {
    const { store, clock } = storeAt(redis);
    const r = await store.create(base(['confirm']));
    clock.now = r.expiresAt;
    expect(await store.answer('acct', r.id, 'confirm', '{"action":"accept"}', 'owner')).toMatchObject({
      ok: false,
      reason: 'expired',
    });
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

describe('InputStore caps: waiting input requests per agent and per account (real Redis)', () => {
  const redis = suiteRedis();

  it('the per-agent cap counts and records in one step: 30 racing creations record exactly the cap; the last answer or the deadline frees a place', async () => {
    const { store, clock } = storeAt(redis);
    const caps = { maxPendingPerAgent: 3 };
    const { created, refused } = await race(30, () => store.create(base(['confirm']), caps));
    expect(created).toHaveLength(3);
    for (const reason of refused)
      expect(reason).toMatchObject({ name: 'PendingInputsFullError', scope: 'agent', max: 3 });
    // Another agent of the account has places of its own; a runtime-only request is never counted.
    await store.create({ ...base(['confirm']), agent: 'other' }, caps);
    expect((await store.create(base([]), caps)).status).toBe('answered');
    // The last answer frees one place (an answer that leaves a question open does not).
    await store.answer('acct', created[0]!.id, 'confirm', '{"action":"accept"}', 'owner');
    await store.create(base(['confirm']), caps);
    await expect(store.create(base(['confirm']), caps)).rejects.toBeInstanceOf(PendingInputsFullError);
    const open = await store.create({ ...base(['confirm', 'region']), agent: 'third' }, caps);
    await store.answer('acct', open.id, 'confirm', '{"action":"accept"}', 'owner');
    expect((await store.listPending('acct')).filter((r) => r.agent === 'third')).toHaveLength(1);
    // Expired requests no longer count.
    clock.now += TTL_MS;
    await store.create(base(['confirm']), caps);
  });

  it('the per-account cap counts every agent of the account in the same step: 40 racing creations over 20 agents record exactly the cap; the refusal names the account, writes nothing, and leaves other accounts alone', async () => {
    const { store, prefix } = storeAt(redis);
    const caps = { maxPendingPerAgent: 3, maxPendingPerAccount: 5 };
    const { created, refused } = await race(40, (i) =>
      store.create({ ...base(['confirm']), agent: `ag${i % 20}` }, caps),
    );
    expect(created).toHaveLength(5);
    for (const reason of refused)
      expect(reason).toMatchObject({ name: 'PendingInputsFullError', scope: 'account', max: 5 });
    expect(await store.listPending('acct')).toHaveLength(5);
    expect(await store.countPending()).toBe(5);

    const before = await keysUnder(redis, prefix);
    await expect(store.create({ ...base(['confirm']), agent: 'fresh' }, caps)).rejects.toMatchObject({
      scope: 'account',
      max: 5,
    });
    expect(await keysUnder(redis, prefix)).toEqual(before);

    await store.create({ ...base(['confirm']), account: 'other', agent: 'fresh' }, caps);
    await store.answer('acct', created[0]!.id, 'confirm', '{"action":"decline"}', 'owner');
    await store.create({ ...base(['confirm']), agent: 'fresh' }, caps);
    await expect(store.create({ ...base(['confirm']), agent: 'fresh2' }, caps)).rejects.toMatchObject({
      scope: 'account',
    });
    // A cap of 0 is none.
    await store.create({ ...base(['confirm']), agent: 'fresh2' }, { maxPendingPerAgent: 3, maxPendingPerAccount: 0 });
  });
  it("the account's bytes budget and the global caps refuse alike, naming scope and unit; a complete answer gives the bytes back", async () => {
    const { store } = storeAt(redis);
    const one = Buffer.byteLength(JSON.stringify({ ...base(['confirm']), id: 'inp_' + 'x'.repeat(22) })) + 200;
    const caps = { maxPendingBytesPerAccount: one * 2, maxPendingGlobal: 3 };
    const a = await store.create(base(['confirm']), caps);
    await store.create(base(['confirm']), caps);
    await expect(store.create(base(['confirm']), caps)).rejects.toMatchObject({
      name: 'PendingInputsFullError',
      scope: 'account',
      unit: 'bytes',
      max: one * 2,
    });
    await store.create({ ...base(['confirm']), account: 'other' }, caps);
    await expect(store.create({ ...base(['confirm']), account: 'third' }, caps)).rejects.toMatchObject({
      scope: 'global',
      unit: 'count',
      max: 3,
    });
    expect((await store.answer('acct', a.id, 'confirm', '{"action":"accept"}', 'owner')).ok).toBe(true);
    await store.create(base(['confirm']), caps);
  });
});

describe('InputStore.countPending: input requests waiting across accounts (real Redis)', () => {
  const redis = suiteRedis();

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
