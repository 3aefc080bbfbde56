import fc from 'fast-check';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readReply } from '@mcpx/bus';
import { WireError, encodePayload, makeSubjects, oauthRefreshAnswerValue } from '@mcpx/contracts';
import { DEFAULT_LIVENESS, ProxyClient } from '@mcpx/proxy-client';
import { serviceUrls, uniqueNamespace } from '../support/env.js';

/**
 * Replies are NATS payloads too: whoever answers a request — a proxy for the
 * runtime's call, the registry for the proxy's OAuth refresh — may answer with anything. Each
 * reply is strictly decoded and checked; a malformed one is the responder's fault (`internal`; a call's: `maybe_executed`,
 * `field: 'reply…'`), never a crash, a hang or a half-read value, and the next good reply is read.
 */

const MARK = 'REPLY-MARKER-7c1d';

const malformedReplies: Array<[string, Uint8Array]> = [
  ['empty', new Uint8Array(0)],
  ['garbage', Uint8Array.from([0xff, 0xfe, ...new TextEncoder().encode(MARK)])],
  ['shared-value tag', Uint8Array.from([0xd8, 28, 0xa1, 0x62, 0x6f, 0x6b, 0xf5])],
  ['indefinite map', Uint8Array.from([0xbf, 0x62, 0x6f, 0x6b, 0xf5, 0xff])],
  ['a list', encodePayload([true, MARK])],
  ['no instance', encodePayload({ ok: true, result: { text: MARK } })],
  ['result not a map', encodePayload({ ok: true, instance: 'p1', result: MARK })],
  ['ok not a boolean', encodePayload({ ok: 'yes', instance: 'p1', result: {} })],
];

describe("the proxy client reads a rogue responder's replies as typed errors (real NATS)", () => {
  let nc: NatsConnection;
  const prefix = uniqueNamespace().natsPrefix;
  const subjects = makeSubjects(prefix);

  beforeAll(async () => {
    nc = await connect({ servers: serviceUrls().nats, name: 'reply-decoding-test' });
  });
  afterAll(async () => {
    await nc?.close();
  });

  it('every malformed call reply is maybe_executed (the call may have run: never retried) naming the reply, and the next good reply is a result', async () => {
    const replies = [
      ...malformedReplies.map(([, b]) => b),
      encodePayload({ ok: true, instance: 'p1', result: { content: [], text: 'fine', summary: 'ok', durationMs: 1 } }),
    ];
    let i = 0;
    // A responder in the proxies' queue group answering in turn with each reply.
    const sub = nc.subscribe(subjects.proxyCall, { queue: 'proxy', callback: (_e, m) => void m.respond(replies[i++]) });
    const client = new ProxyClient(nc, subjects, { liveness: { ...DEFAULT_LIVENESS, afterMs: 0 } });
    try {
      await nc.flush();
      for (const [what] of malformedReplies) {
        const err = await client
          .call({ account: 'a', agent: 'b', run: `r-${what.replace(/\W/g, '')}`, tool: 't' })
          .catch((e: unknown) => e);
        expect({ what, err }).toMatchObject({
          err: { code: 'maybe_executed', retryable: false, details: { field: expect.stringMatching(/^reply/) } },
        });
        expect(err).toBeInstanceOf(WireError);
        expect(JSON.stringify({ message: (err as Error).message, details: (err as WireError).details })).not.toContain(
          MARK,
        );
      }
      const ok = await client.call({ account: 'a', agent: 'b', run: 'r-good', tool: 't' });
      expect(ok).toMatchObject({ instance: 'p1', result: { text: 'fine' } });
    } finally {
      sub.unsubscribe();
    }
  });
});

describe("the proxy's reading of the registry's OAuth refresh replies (the one reply envelope)", () => {
  const subject = makeSubjects().registryOAuthRefresh;
  /** The proxy's reading: the envelope, then the answer; a refused reply is thrown. */
  const read = (bytes: Uint8Array): unknown => readReply(subject, bytes, oauthRefreshAnswerValue);
  const thrown = (bytes: Uint8Array): unknown => {
    try {
      return read(bytes);
    } catch (e) {
      return e;
    }
  };

  it('keeps the two answers it knows, throws an error reply as its typed error, and refuses the rest as internal', () => {
    expect(read(encodePayload({ ok: true, value: { state: 'authorized', extra: 1 } }))).toEqual({
      state: 'authorized',
    });
    // An authorization URL is never passed on, even if a reply carried one.
    expect(
      read(
        encodePayload({
          ok: true,
          value: { state: 'auth_required', authorizationUrl: 'https://as.example/authorize?x', vendor: 'github' },
        }),
      ),
    ).toEqual({
      state: 'auth_required',
      vendor: 'github',
    });
    expect(thrown(encodePayload({ ok: false, error: { code: 'not_found', message: 'no such server' } }))).toMatchObject(
      { code: 'not_found' },
    );
    expect(thrown(encodePayload({ ok: false, error: 'not a shape' }))).toMatchObject({ code: 'internal' });
    const refused: Array<[Uint8Array, string]> = [
      ...malformedReplies.slice(0, 5).map(([, b]): [Uint8Array, string] => [b, 'reply']),
      [encodePayload({ ok: true, value: { state: 'maybe' } }), 'reply.value.state'],
      [encodePayload({ ok: true, value: { state: 'auth_required', vendor: 7 } }), 'reply.value.vendor'],
      // The flat reply of the envelope's predecessor: no value.
      [encodePayload({ ok: true, state: 'authorized' }), 'reply.value'],
      [encodePayload({ ok: 1 }), 'reply'],
    ];
    for (const [bytes, field] of refused)
      expect({ field, err: thrown(bytes) }).toMatchObject({ err: { code: 'internal', details: { field } } });
  });

  it('fuzzed: any bytes give an answer or a WireError (internal naming the reply, or the error a reply carried), never another throw', () => {
    const soup = fc.array(
      fc.oneof(fc.integer({ min: 0, max: 255 }), fc.constantFrom(0xa1, 0xbf, 0xff, 0xd8, 0x62, 0x6f, 0x6b, 0xf5, 0xf4)),
      { maxLength: 64 },
    );
    const answer = fc.record(
      {
        state: fc.oneof(fc.constantFrom('authorized', 'auth_required'), fc.string()),
        vendor: fc.oneof(fc.string(), fc.integer()),
      },
      { requiredKeys: [] },
    );
    const shaped = fc.record(
      {
        ok: fc.oneof(fc.boolean(), fc.string()),
        value: answer,
        error: fc.oneof(fc.string(), fc.record({ code: fc.string(), message: fc.string() })),
      },
      { requiredKeys: [] },
    );
    const inputs = fc.oneof(
      soup.map((b) => Uint8Array.from(b)),
      shaped.map((v) => encodePayload(v)),
    );
    fc.assert(
      fc.property(inputs, (bytes) => {
        try {
          const r = read(bytes) as { state: unknown };
          expect(['authorized', 'auth_required']).toContain(r.state);
        } catch (e) {
          expect(e).toBeInstanceOf(WireError);
          const w = e as WireError;
          // Either the reply is malformed (internal, naming it) or it carried an error, rebuilt as typed.
          if (w.details.field !== undefined) expect(w.details.field).toMatch(/^reply/);
          else expect(typeof w.code).toBe('string');
        }
      }),
      { numRuns: 2_000 },
    );
  });
});
