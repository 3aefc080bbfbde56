import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BODY_LIMITS, decodePayload, decodeStrict, encodePayload } from '@mcpx/contracts';
import { sharedValueBomb } from '@mcpx/contracts/test-support';
import { RegistryHarness } from '../support/registry-harness.js';
import type { ApiClient } from '../support/api-client.js';

/**
 * The attack against the real registry: an unauthenticated ~500-byte CBOR
 * body whose shared values (tags 28/29) unfold exponentially once the envelope is re-encoded for
 * the signature check. It, and its cousins, must be refused with 400 `invalid_input` naming
 * `body` — and the registry must go on answering: `/healthz` right after, then a signed action.
 */

const concat = (...parts: Uint8Array[]): Uint8Array => Uint8Array.from(parts.flatMap((p) => [...p]));
const bytes = (...b: number[]): Uint8Array => Uint8Array.from(b);

/** A CBOR map written by hand from already-encoded values, so a value can hold anything. */
function cborMap(entries: Array<[string, Uint8Array]>): Uint8Array {
  return concat(bytes(0xa0 | entries.length), ...entries.flatMap(([k, v]) => [encodePayload(k), v]));
}

describe('strict decoding of action bodies: the shared-value bomb and its cousins (real registry)', () => {
  let h: RegistryHarness;
  let api: ApiClient;

  beforeAll(async () => {
    h = await RegistryHarness.start({ projector: false });
    api = h.api();
  });
  afterAll(async () => {
    await h?.stop();
  });

  /** An envelope of `api`'s whose action carries `value` (already encoded), not signed over it. */
  const envelopeWith = (value: Uint8Array): Uint8Array => {
    const env = api.envelope({ type: 'SetMcpServer', name: 'x' });
    const action = cborMap([
      ['type', encodePayload('SetMcpServer')],
      ['name', encodePayload('x')],
      ['config', value],
    ]);
    return cborMap([
      ['signer', encodePayload(env.signer)],
      ['account', encodePayload(env.account)],
      ['ts', encodePayload(env.ts)],
      ['nonce', encodePayload(env.nonce)],
      ['action', action],
      ['sig', encodePayload(env.sig)],
    ]);
  };

  const post = async (
    body: Uint8Array | string,
    contentType = 'application/cbor',
  ): Promise<{ status: number; body: any }> => {
    const res = await fetch(new URL('/v1/actions', h.apiUrl), {
      method: 'POST',
      headers: { 'content-type': contentType },
      body,
    });
    const raw = new Uint8Array(await res.arrayBuffer());
    return {
      status: res.status,
      body:
        contentType === 'application/cbor'
          ? decodeStrict(raw, 'response')
          : JSON.parse(Buffer.from(raw).toString('utf8')),
    };
  };

  /** After each refusal: the registry still answers its health check and a normal signed action. */
  const stillServes = async (): Promise<void> => {
    const health = await fetch(new URL('/healthz', h.apiUrl));
    expect(health.status).toBe(200);
    await expect(api.act('ListMcpServers')).resolves.toMatchObject({ servers: [] });
  };

  it('refuses the 40-level tag-28/29 body (~500 bytes) with 400 invalid_input naming body, and keeps serving', async () => {
    const body = envelopeWith(sharedValueBomb(40));
    expect(body.byteLength).toBeLessThan(600);
    // What the lenient decoder would have handed on: a graph whose unfolding has 2^40 leaves.
    const lenient = decodePayload<{ action: { config: unknown[] } }>(body);
    expect(lenient.action.config[0]).toBe(lenient.action.config[1]);

    const answer = await post(body);
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: 'invalid_input', details: { field: 'body', rule: 'tag' } });
    expect(answer.body.error.message).toMatch(/^body: tag 28 is not allowed/);
    await stillServes();
  });

  it.each([
    [
      'an indefinite-length map',
      () => concat(bytes(0xbf), encodePayload('a'), encodePayload(1), bytes(0xff)),
      'indefinite_length',
    ],
    [
      'an indefinite-length array inside the action',
      () => envelopeWith(bytes(0x9f, 0x01, 0x02, 0xff)),
      'indefinite_length',
    ],
    ['an indefinite-length text', () => envelopeWith(bytes(0x7f, 0x61, 0x61, 0xff)), 'indefinite_length'],
    ['a date tag (not 42)', () => envelopeWith(bytes(0xc1, 0x1a, 0x65, 0x00, 0x00, 0x00)), 'tag'],
    ['a bignum tag', () => envelopeWith(bytes(0xc2, 0x48, 1, 2, 3, 4, 5, 6, 7, 8)), 'tag'],
    [
      'a huge declared byte string with a short body',
      () => bytes(0x5b, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x01),
      'truncated',
    ],
    [
      'a huge declared array with a short body',
      () => envelopeWith(bytes(0x9b, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01)),
      'truncated',
    ],
    ['a huge declared map with a short body', () => bytes(0xba, 0xff, 0xff, 0xff, 0xff, 0x61, 0x61), 'truncated'],
    ['undefined', () => envelopeWith(bytes(0xf7)), 'simple_value'],
    ['a NaN', () => envelopeWith(bytes(0xfb, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0)), 'float'],
    ['an integer map key', () => envelopeWith(bytes(0xa1, 0x01, 0x02)), 'map_key'],
    ['an empty body', () => new Uint8Array(0), 'empty'],
  ])('refuses %s with 400 invalid_input naming body, and keeps serving', async (_what, body, rule) => {
    const answer = await post(body());
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: 'invalid_input', details: { field: 'body', rule } });
    await stillServes();
  });

  it("refuses a 100,000-deep array, CBOR or JSON, with 400 invalid_input naming the action's field it lies in and the bound", async () => {
    const env = api.envelope({ type: 'SetMcpServer', name: 'x' });
    const json = JSON.stringify({ ...env, action: { ...env.action, config: '@' } }).replace(
      '"@"',
      `${'['.repeat(100_000)}${']'.repeat(100_000)}`,
    );
    for (const answer of [
      await post(envelopeWith(concat(new Uint8Array(100_000).fill(0x81), bytes(0x00)))),
      await post(json, 'application/json'),
    ]) {
      expect(answer.status).toBe(400);
      expect(answer.body.error).toMatchObject({
        code: 'invalid_input',
        details: { field: 'config', rule: 'depth', limit: BODY_LIMITS.maxDepth },
      });
    }
    // Outside any action field, the body is named.
    const bare = await post(`${'['.repeat(100_000)}${']'.repeat(100_000)}`, 'application/json');
    expect(bare.body.error).toMatchObject({
      code: 'invalid_input',
      details: { field: 'body', rule: 'depth', limit: BODY_LIMITS.maxDepth },
    });
    await stillServes();
  });

  it('re-encodes a strictly decoded body in bounded work: a wide one that decodes is checked and refused as unsigned', async () => {
    // 150,000 items (within the item bound) that the signature does not cover: decoded, re-encoded
    // once for the check (linear), refused 401 — the same answer as any forged signature.
    const wide = concat(bytes(0x9a, 0x00, 0x02, 0x49, 0xf0), new Uint8Array(150_000).fill(0x00));
    const answer = await post(envelopeWith(wide));
    expect(answer.status).toBe(401);
    expect(answer.body.error).toMatchObject({ code: 'unauthenticated', details: { field: 'sig' } });
    await stillServes();
  });

  it('refuses a "__proto__" key in a CBOR or JSON body with 400 invalid_input (map_key) naming body, before the signature and before any action reads it', async () => {
    const env = api.envelope({ type: 'ListMcpServers' });
    const action = JSON.parse(
      '{"type":"SetMcpServer","name":"x","config":{"url":"http://127.0.0.1:1/mcp","__proto__":{"pin":"off"}}}',
    ) as unknown;
    for (const [body, type] of [
      [encodePayload({ ...env, action }), 'application/cbor'],
      [JSON.stringify({ ...env, action }), 'application/json'],
    ] as const) {
      const answer = await post(body, type);
      expect(answer.status, type).toBe(400);
      expect(answer.body.error).toMatchObject({ code: 'invalid_input', details: { field: 'body', rule: 'map_key' } });
    }
    await stillServes();
  });

  it('still takes a signed CBOR action', async () => {
    const answer = await post(encodePayload(api.envelope({ type: 'ListMcpServers' })));
    expect(answer).toMatchObject({ status: 200, body: { servers: [] } });
  });
});
