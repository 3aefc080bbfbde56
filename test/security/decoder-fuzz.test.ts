import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BODY_LIMITS,
  WireError,
  checkValueBounds,
  decodeAgentChangedEvent,
  decodeAgentToolsChangedEvent,
  decodeApprovalDecidedEvent,
  decodeApprovalRequestedEvent,
  decodeInputAnsweredEvent,
  decodeInputRequestedEvent,
  decodeOAuthRefreshRequest,
  decodePayload,
  decodeProxyCancel,
  decodeReply,
  decodeRequest,
  decodeRunEnded,
  decodeServerDeletedEvent,
  decodeServerDiscoveredEvent,
  decodeStrict,
  decodeToolReviewRequestedEvent,
  decodeToolsObserved,
  decodeUpstreamNotice,
  decodeWatchRequest,
  encodePayload,
  parseCallRequest,
  proxyResultValue,
} from '@mcpx/contracts';
import { generateKeyPair, parseEnvelope, signAction, verifySignature } from '@mcpx/envelope';

/**
 * Property-based fuzzing: the strict decoder, every NATS payload decoder, the
 * envelope parser (with the signature check behind it) and the proxy's call request, fed arbitrary
 * bytes, CBOR "token soup" (the heads attacks are made of) and mutated valid encodings. Each
 * answers with a value or a typed `invalid_input` naming a field — never another throw. Runs are
 * bounded, and each input is bounded in size, so a hang would show as the test's timeout.
 */

/** The one kind of failure allowed: invalid_input whose message starts with the field it names. */
function expectTyped(e: unknown): void {
  if (!(e instanceof WireError)) throw new Error(`not a WireError: ${String(e)}`);
  expect(e.code).toBe('invalid_input');
  expect(typeof e.details.field).toBe('string');
  expect(e.message.startsWith(`${String(e.details.field)}: `)).toBe(true);
}

function valueOrTyped<T>(f: () => T): T | undefined {
  try {
    return f();
  } catch (e) {
    expectTyped(e);
    return undefined;
  }
}

/** Heads and bytes that attacks are made of: indefinite lengths, breaks, tags 28/29/42, huge lengths, simple values, floats. */
const token = fc.oneof(
  fc.constantFrom(
    0x9f,
    0xbf,
    0x7f,
    0x5f,
    0xff,
    0xd8,
    0x1c,
    0x1d,
    0x2a,
    0xd9,
    0xc1,
    0xc2,
    0x5b,
    0x9b,
    0xbb,
    0x1b,
    0xf7,
    0xf8,
    0xf9,
    0xfa,
    0xfb,
    0xf4,
    0xf5,
    0xf6,
    0x80,
    0xa0,
    0x81,
    0xa1,
    0x60,
    0x40,
    0x00,
    0x18,
  ),
  fc.integer({ min: 0, max: 255 }),
);
const soup = fc.array(token, { maxLength: 300 }).map((b) => Uint8Array.from(b));
const arbitraryBytes = fc.uint8Array({ maxLength: 600 });

/** A mutation of valid bytes: flip, overwrite, insert, delete, truncate, duplicate a slice. */
function mutated(valid: fc.Arbitrary<Uint8Array>): fc.Arbitrary<Uint8Array> {
  const edit = fc.record({
    kind: fc.constantFrom('flip', 'set', 'insert', 'delete', 'truncate', 'dup'),
    at: fc.nat(),
    byte: fc.integer({ min: 0, max: 255 }),
    len: fc.integer({ min: 1, max: 16 }),
  });
  return fc.tuple(valid, fc.array(edit, { minLength: 1, maxLength: 4 })).map(([bytes, edits]) => {
    let b = [...bytes];
    for (const e of edits) {
      const at = b.length === 0 ? 0 : e.at % b.length;
      if (e.kind === 'flip' && b.length > 0) b[at] = b[at]! ^ (1 << (e.byte % 8));
      else if (e.kind === 'set' && b.length > 0) b[at] = e.byte;
      else if (e.kind === 'insert') b.splice(at, 0, e.byte);
      else if (e.kind === 'delete') b.splice(at, e.len);
      else if (e.kind === 'truncate') b = b.slice(0, at);
      else if (e.kind === 'dup') b.splice(at, 0, ...b.slice(at, at + e.len));
    }
    return Uint8Array.from(b);
  });
}

/** JSON-like values, nested, with byte strings: what payloads carry. */
const payloadValue: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.string({ unit: 'grapheme', maxLength: 20 }),
    fc.uint8Array({ maxLength: 8 }),
    fc.array(tie('value'), { maxLength: 5 }),
    fc.dictionary(fc.string({ maxLength: 8 }), tie('value'), { maxKeys: 5 }),
  ),
})).value;

// Not `__proto__`: the wire refuses that key (a test below), so a valid payload never holds it.
const id = fc.stringMatching(/^[A-Za-z0-9_-]{1,20}$/).filter((s) => s !== '__proto__');
const hex = fc.stringMatching(/^[0-9a-f]{1,64}$/);
/** The call an approval or input event is about: its agent, run, tool and server. */
const aCall = { agent: id, run: id, tool: id, server: id };
const cid = fc.stringMatching(/^b[a-z2-7]{20,60}$/);
const tool = fc.record({
  name: id,
  description: fc.option(fc.string({ maxLength: 30 }), { nil: undefined }),
  inputSchema: fc.constant({ type: 'object' }),
});

/** Valid payloads of every subscribed subject, with their decoders. */
const decoders: Array<[string, (b: Uint8Array) => unknown, fc.Arbitrary<unknown>]> = [
  [
    'oauth refresh',
    decodeOAuthRefreshRequest,
    fc.record({ account: id, server: id, staleTokenHash: fc.option(hex, { nil: undefined }) }),
  ],
  ['cancel', decodeProxyCancel, fc.record({ account: id, run: id, callId: id })],
  ['run ended', decodeRunEnded, fc.record({ account: id, run: id })],
  [
    'tools observed',
    decodeToolsObserved,
    fc.record({
      account: id,
      server: id,
      tools: fc.array(tool, { maxLength: 4 }),
      transport: fc.constantFrom('http', 'sse'),
    }),
  ],
  [
    'server discovered',
    decodeServerDiscoveredEvent,
    fc.record({
      account: id,
      server: id,
      serverId: id,
      generation: fc.nat(),
      tools: fc.array(tool, { maxLength: 4 }),
      status: fc.record(
        {
          state: fc.constantFrom('ok', 'error', 'auth_required', 'unknown'),
          error: fc.string({ maxLength: 20 }),
          checkedAt: id,
          transport: fc.constantFrom('http', 'sse'),
          failures: fc.nat(),
          era: fc.constantFrom('modern', 'legacy'),
          skippedTools: fc.array(fc.record({ name: id, reason: fc.string({ maxLength: 20 }) }), { maxLength: 2 }),
          listTtlMs: fc.nat(),
          listCacheScope: fc.constantFrom('public', 'private'),
          heldTools: fc.array(
            fc.record({
              name: id,
              cid: id,
              reason: fc.constant('held_for_review'),
              state: fc.constantFrom('pending', 'rejected'),
              withheld: fc.boolean(),
            }),
            { maxLength: 2 },
          ),
        },
        { requiredKeys: ['state'] },
      ),
      toolsChanged: fc.boolean(),
      overrides: fc.option(fc.dictionary(id, fc.constantFrom('act', 'always_ask'), { maxKeys: 3 }), { nil: undefined }),
      held: fc.option(fc.array(fc.record({ name: id, cid: id }), { maxLength: 2 }), { nil: undefined }),
    }),
  ],
  [
    'watch request',
    decodeWatchRequest,
    fc.record({
      op: fc.constantFrom('hold', 'release'),
      account: id,
      agent: id,
      holder: id,
      server: id,
      kind: fc.constant('resource'),
      uri: id.map((s) => `test://${s}`),
    }),
  ],
  [
    'upstream notice',
    decodeUpstreamNotice,
    fc.record({
      account: id,
      server: id,
      kind: fc.constantFrom('tools', 'prompts', 'resources'),
      count: fc.integer({ min: 1, max: 10_000 }),
    }),
  ],
  ['server deleted', decodeServerDeletedEvent, fc.record({ account: id, server: id, serverId: id })],
  [
    'agent changed',
    decodeAgentChangedEvent,
    fc.record({ account: id, agent: id, revision: fc.nat(), mcpServers: fc.array(id, { maxLength: 4 }) }),
  ],
  [
    'agent tools changed',
    decodeAgentToolsChangedEvent,
    fc.record({
      account: id,
      agent: id,
      version: fc.nat(),
      added: fc.dictionary(id, id),
      changed: fc.dictionary(id, id),
      removed: fc.array(id),
    }),
  ],
  [
    'approval requested',
    decodeApprovalRequestedEvent,
    fc.record({
      account: id,
      approvalId: id,
      ...aCall,
      remoteName: id,
      argsHash: hex,
      expiresAt: id,
    }),
  ],
  [
    'approval decided',
    decodeApprovalDecidedEvent,
    fc.record({
      account: id,
      approvalId: id,
      ...aCall,
      decision: fc.constantFrom('approved', 'denied'),
      decidedBy: id,
      decidedAt: id,
      expiresAt: id,
    }),
  ],
  [
    'input requested',
    decodeInputRequestedEvent,
    fc.record({
      account: id,
      inputRequestId: id,
      ...aCall,
      forPerson: fc.boolean(),
      expiresAt: id,
    }),
  ],
  [
    'input answered',
    decodeInputAnsweredEvent,
    fc.record({
      account: id,
      inputRequestId: id,
      ...aCall,
      answeredBy: fc.string({ maxLength: 20 }),
      answeredAt: id,
      expiresAt: id,
    }),
  ],
  [
    'tool review requested',
    decodeToolReviewRequestedEvent,
    fc.record({
      account: id,
      server: id,
      changes: fc.array(
        fc.record({
          tool: fc.stringMatching(/^[A-Za-z0-9 _.:-]{1,40}$/),
          cid,
          kind: fc.constantFrom('new', 'changed'),
          withheld: fc.boolean(),
        }),
        { maxLength: 5 },
      ),
      pending: fc.nat(),
    }),
  ],
  // A call reply's result, strictly decoded as a reply is, then checked in place.
  [
    'call result',
    (b) => proxyResultValue(decodeStrict(b, 'result'), 'result'),
    fc.record({
      summary: fc.string({ maxLength: 30 }),
      text: fc.option(fc.string({ maxLength: 30 }), { nil: undefined }),
      result: fc.option(payloadValue, { nil: undefined }),
      images: fc.option(
        fc.array(fc.record({ data: fc.base64String({ maxLength: 40 }), mimeType: fc.constant('image/png') }), {
          maxLength: 2,
        }),
        { nil: undefined },
      ),
      durationMs: fc.nat(),
    }),
  ],
  ['request', (b) => decodeRequest(b), fc.dictionary(id, payloadValue, { maxKeys: 4 })],
  ['reply', decodeReply, fc.record({ ok: fc.boolean(), value: payloadValue })],
];

describe('fuzzing the strict decoder (fast-check)', () => {
  it('arbitrary bytes and CBOR token soup: a value or invalid_input, never another throw', () => {
    fc.assert(
      fc.property(fc.oneof(arbitraryBytes, soup), (bytes) => void valueOrTyped(() => decodeStrict(bytes, 'payload'))),
      { numRuns: 4_000 },
    );
  });

  it('every valid encoding of a payload value decodes, to what the lenient decoder gives', () => {
    fc.assert(
      fc.property(payloadValue, (v) => {
        const bytes = encodePayload(v);
        expect(decodeStrict(bytes, 'payload')).toEqual(decodePayload(bytes));
      }),
      { numRuns: 1_000 },
    );
  });

  it('mutated valid encodings: a value or invalid_input', () => {
    fc.assert(
      fc.property(
        mutated(payloadValue.map((v) => encodePayload(v))),
        (bytes) => void valueOrTyped(() => decodeStrict(bytes, 'payload')),
      ),
      { numRuns: 4_000 },
    );
  });

  it('parsed JSON of any shape: checkValueBounds passes or refuses with invalid_input', () => {
    fc.assert(
      fc.property(
        fc.jsonValue(),
        (v) => void valueOrTyped(() => checkValueBounds(v, 'body', { maxDepth: 4, maxItems: 50 })),
      ),
      { numRuns: 1_000 },
    );
  });
});

describe('fuzzing the NATS payload decoders (fast-check)', () => {
  it.each(decoders)(
    '%s: valid payloads decode; arbitrary, soup and mutated bytes give a value or invalid_input',
    (_name, decode, valid) => {
      fc.assert(
        fc.property(valid, (v) => {
          expect(() => decode(encodePayload(v))).not.toThrow();
        }),
        { numRuns: 200 },
      );
      fc.assert(
        fc.property(
          fc.oneof(arbitraryBytes, soup, mutated(valid.map((v) => encodePayload(v)))),
          (bytes) => void valueOrTyped(() => decode(bytes)),
        ),
        { numRuns: 1_500 },
      );
      // Valid CBOR of any other shape.
      fc.assert(
        fc.property(payloadValue, (v) => void valueOrTyped(() => decode(encodePayload(v)))),
        { numRuns: 500 },
      );
    },
  );

  it('the proxy call request: strict decode then parseCallRequest give a request or invalid_input', () => {
    const request = fc.record({
      account: id,
      agent: id,
      run: id,
      callId: id,
      tool: id,
      arguments: fc.dictionary(id, payloadValue, { maxKeys: 3 }),
      timeoutMs: fc.option(fc.nat(), { nil: undefined }),
    });
    const bytes = fc.oneof(
      arbitraryBytes,
      soup,
      mutated(request.map((r) => encodePayload(r))),
      payloadValue.map((v) => encodePayload(v)),
    );
    fc.assert(
      fc.property(bytes, (b) => void valueOrTyped(() => parseCallRequest(decodeStrict(b, 'request')))),
      { numRuns: 3_000 },
    );
  });
});

describe('fuzzing the envelope parser and the signature check behind it (fast-check)', () => {
  const key = generateKeyPair();
  // Actions are JSON data (what a client can send either way).
  const json = fc
    .jsonValue()
    .map((v) => JSON.parse(JSON.stringify(v)) as unknown)
    .filter((v) => !JSON.stringify(v).includes('"__proto__"'));
  const action = fc.record(
    { type: fc.constantFrom('ListMcpServers', 'SetMcpServer', 'GetAgent'), name: id, config: json },
    { requiredKeys: ['type'] },
  );
  const signed = action.map((a) => signAction(key, key.principal, a));

  /** What the registry does with a body: strict decode, the envelope's shape, then the signature. */
  const accept = (decode: () => unknown): void => {
    const envelope = valueOrTyped(() => parseEnvelope(decode()));
    if (envelope !== undefined) expect(typeof verifySignature(envelope)).toBe('boolean');
  };

  it('a signed envelope verifies after the CBOR and JSON round trips', () => {
    fc.assert(
      fc.property(signed, (env) => {
        expect(verifySignature(parseEnvelope(decodeStrict(encodePayload(env), 'body', BODY_LIMITS)))).toBe(true);
        expect(verifySignature(parseEnvelope(JSON.parse(JSON.stringify(env)) as unknown))).toBe(true);
      }),
      { numRuns: 200 },
    );
  });

  it('a "__proto__" key anywhere in a body is invalid_input (map_key) in CBOR and in JSON, and cannot be signed', () => {
    // Found by the property above: cbor-x renames the key on decoding, so such an envelope failed its signature check.
    const env = signAction(key, key.principal, { type: 'ListMcpServers' });
    const cbor = encodePayload({
      ...env,
      action: JSON.parse('{"type":"SetMcpServer","config":{"__proto__":{"pin":"off"}}}') as unknown,
    });
    expect(() => decodeStrict(cbor, 'body', BODY_LIMITS)).toThrow(
      expect.objectContaining({
        code: 'invalid_input',
        details: expect.objectContaining({ field: 'body', rule: 'map_key' }),
      }),
    );
    const text = JSON.stringify({
      ...env,
      action: { type: 'SetMcpServer', config: JSON.parse('{"a":[{"__proto__":1}]}') as unknown },
    });
    expect(() => checkValueBounds(JSON.parse(text), 'body', BODY_LIMITS)).toThrow(
      expect.objectContaining({
        code: 'invalid_input',
        details: expect.objectContaining({ field: 'body', rule: 'map_key' }),
      }),
    );
    expect(() =>
      signAction(key, key.principal, JSON.parse('{"type":"SetMcpServer","__proto__":{}}') as { type: string }),
    ).toThrow(expect.objectContaining({ code: 'invalid_input' }));
  });

  it('CBOR bodies: arbitrary, soup and mutated signed envelopes give invalid_input or a boolean verdict, never another throw', () => {
    const bodies = fc.oneof(arbitraryBytes, soup, mutated(signed.map((e) => encodePayload(e))));
    fc.assert(
      fc.property(bodies, (b) => accept(() => decodeStrict(b, 'body', BODY_LIMITS))),
      { numRuns: 3_000 },
    );
  });

  it('a mutated envelope that still decodes verifies only if it decodes to the signed value', () => {
    fc.assert(
      fc.property(
        signed,
        fc.array(fc.record({ at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }), { minLength: 1, maxLength: 3 }),
        (env, edits) => {
          const b = encodePayload(env);
          for (const e of edits) b[e.at % b.length] = e.byte;
          let decoded: unknown;
          try {
            decoded = decodeStrict(b, 'body', BODY_LIMITS);
          } catch (e) {
            expectTyped(e);
            return;
          }
          const envelope = valueOrTyped(() => parseEnvelope(decoded));
          if (envelope === undefined) return;
          // A byte change that leaves the decoded value as it was (a length written wider, say) may
          // verify; any other must not.
          const same =
            JSON.stringify(decodePayload(encodePayload(envelope))) ===
            JSON.stringify(decodePayload(encodePayload(env)));
          if (!same) expect(verifySignature(envelope)).toBe(false);
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it('JSON bodies: any JSON value, bounded then parsed, gives invalid_input or a boolean verdict', () => {
    const bodies = fc.oneof(
      fc.jsonValue(),
      signed.map((e) => JSON.parse(JSON.stringify(e)) as unknown),
      fc.record({
        signer: fc.string(),
        account: fc.string(),
        ts: fc.integer(),
        nonce: fc.string(),
        action: fc.jsonValue(),
        sig: fc.string(),
      }),
    );
    fc.assert(
      fc.property(bodies, (v) =>
        accept(() => {
          checkValueBounds(v, 'body', BODY_LIMITS);
          return v;
        }),
      ),
      { numRuns: 2_000 },
    );
  });
});
