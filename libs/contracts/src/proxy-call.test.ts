import { describe, expect, it } from 'vitest';
import { encodePayload } from './codec.js';
import { decodeToolReviewRequestedEvent } from './payload-decoders.js';
import { decodeStrict } from './codec.js';
import { WireError } from './errors.js';
import { BODY_LIMITS, PAYLOAD_LIMITS } from './strict-cbor.js';
import { boundInField, checkValueBounds } from './value-bounds.js';
import {
  MAX_CALL_TIMEOUT_MS,
  MAX_REQUEST_BYTES,
  decodeCallRequest,
  encodeCallRequest,
  parseCallRequest,
  proxyResultValue,
} from './proxy-call.js';

import { refusedField } from './refused-field.test-support.js';

describe('the call request', () => {
  const base = { account: 'a', agent: 'b', run: 'r', callId: 'c', tool: 't', arguments: { q: 1 } };

  it('keeps the fields it names: null optional ids are absent, timeouts held to the maximum, only true answer flags', () => {
    expect(parseCallRequest({ ...base, approvalId: null, inputRequestId: null, extra: 'dropped' })).toEqual(base);
    expect(parseCallRequest({ ...base, arguments: undefined })).toEqual({ ...base, arguments: {} });
    expect(parseCallRequest({ ...base, timeoutMs: 10 * MAX_CALL_TIMEOUT_MS }).timeoutMs).toBe(MAX_CALL_TIMEOUT_MS);
    expect(parseCallRequest({ ...base, answers: { sampling: true, forms: false } }).answers).toEqual({
      sampling: true,
    });
    const resumed = parseCallRequest({
      ...base,
      inputRequestId: 'inp_x1',
      inputResponses: { k: { action: 'accept' } },
    });
    expect(resumed).toMatchObject({ inputRequestId: 'inp_x1', inputResponses: { k: { action: 'accept' } } });
    expect(decodeCallRequest(encodePayload(base))).toEqual(base);
    expect(parseCallRequest({ ...base, content: true }).content).toBe(true);
    expect(parseCallRequest({ ...base, content: false })).toEqual(base);
    expect(parseCallRequest({ ...base, content: null })).toEqual(base);
    expect(parseCallRequest({ ...base, progress: true }).progress).toBe(true);
    expect(parseCallRequest({ ...base, progress: false })).toEqual(base);
  });

  it('names the first bad field', () => {
    expect(refusedField(() => parseCallRequest([base]))).toBe('request');
    expect(refusedField(() => parseCallRequest({ ...base, arguments: [1] }))).toBe('arguments');
    expect(refusedField(() => parseCallRequest({ ...base, timeoutMs: 0 }))).toBe('timeoutMs');
    expect(refusedField(() => parseCallRequest({ ...base, tool: 'x'.repeat(129) }))).toBe('tool');
    expect(refusedField(() => parseCallRequest({ ...base, account: 'a b' }))).toBe('account');
    expect(refusedField(() => parseCallRequest({ ...base, approvalId: 7 }))).toBe('approvalId');
    expect(refusedField(() => parseCallRequest({ ...base, requestState: 'forged' }))).toBe('requestState');
    expect(refusedField(() => parseCallRequest({ ...base, inputRequestId: 'x' }))).toBe('inputRequestId');
    expect(refusedField(() => parseCallRequest({ ...base, inputResponses: { k: 1 } }))).toBe('inputResponses');
    expect(refusedField(() => parseCallRequest({ ...base, answers: { forms: 'yes' } }))).toBe('answers.forms');
    expect(refusedField(() => parseCallRequest({ ...base, content: 'yes' }))).toBe('content');
    expect(refusedField(() => parseCallRequest({ ...base, progress: 1 }))).toBe('progress');
  });
});

describe('the call request past its bounds', () => {
  const base = { account: 'a', agent: 'b', run: 'r', callId: 'c', tool: 't', arguments: {} };
  const nested = (levels: number): unknown => {
    let v: unknown = 'leaf';
    for (let i = 0; i < levels; i++) v = [v];
    return v;
  };
  const detailsOf = (fn: () => unknown): Record<string, unknown> => {
    try {
      fn();
    } catch (err) {
      if (err instanceof WireError && err.code === 'invalid_input') return err.details;
      throw err;
    }
    throw new Error('expected invalid_input');
  };

  it('is refused before it is encoded or sent, naming the caller value and the bound', () => {
    expect(detailsOf(() => encodeCallRequest({ ...base, arguments: { d: nested(10_000) } }))).toMatchObject({
      field: 'arguments',
      rule: 'depth',
      limit: PAYLOAD_LIMITS.maxDepth,
    });
    expect(
      detailsOf(() => encodeCallRequest({ ...base, arguments: { s: 'x'.repeat(MAX_REQUEST_BYTES) } })),
    ).toMatchObject({ field: 'arguments', rule: 'size', limit: MAX_REQUEST_BYTES });
    expect(detailsOf(() => encodeCallRequest({ ...base, arguments: { s: 'x'.repeat(1000) } }, 512))).toMatchObject({
      field: 'arguments',
      limit: 512,
    });
    expect(
      detailsOf(() =>
        encodeCallRequest({ ...base, inputRequestId: 'inp_1', inputResponses: { k: 'x'.repeat(MAX_REQUEST_BYTES) } }),
      ),
    ).toMatchObject({ field: 'inputResponses', rule: 'size' });
    expect(decodeCallRequest(encodeCallRequest({ ...base, arguments: { d: nested(100) } }))).toEqual({
      ...base,
      arguments: { d: nested(100) },
    });
  });

  it('decoded, a bound crossed inside arguments names arguments; outside any field, the request', () => {
    expect(
      detailsOf(() =>
        decodeCallRequest(encodePayload({ ...base, arguments: { d: nested(PAYLOAD_LIMITS.maxDepth + 80) } })),
      ),
    ).toMatchObject({
      field: 'arguments',
      rule: 'depth',
      limit: PAYLOAD_LIMITS.maxDepth,
    });
    expect(
      detailsOf(() => decodeCallRequest(encodePayload({ ...base, other: nested(PAYLOAD_LIMITS.maxDepth + 80) }))),
    ).toMatchObject({
      field: 'other',
      rule: 'depth',
      limit: PAYLOAD_LIMITS.maxDepth,
    });
    expect(detailsOf(() => decodeCallRequest(encodePayload([nested(PAYLOAD_LIMITS.maxDepth + 80)])))).toMatchObject({
      field: 'request',
      rule: 'depth',
      limit: PAYLOAD_LIMITS.maxDepth,
      path: [],
    });
  });
});

describe("the call reply's result", () => {
  const result = {
    summary: 'search · mcp',
    argument: 'mcp',
    text: 'found 2',
    result: { hits: [1, 2] },
    images: [{ data: 'iVBO', mimeType: 'image/png' }],
    durationMs: 12,
  };

  it('is checked in place and kept as sent: no copy', () => {
    expect(proxyResultValue(result, 'result')).toBe(result);
    const bare = { summary: '', durationMs: 0.5 };
    expect(proxyResultValue(bare, 'result')).toBe(bare);
    const whole = {
      summary: 's',
      content: [
        { type: 'text', text: 'a', annotations: { priority: 1 } },
        { type: 'resource_link', uri: 'file:///x', name: 'x' },
      ],
      isError: true,
      meta: { k: 1 },
      durationMs: 1,
    };
    expect(proxyResultValue(whole, 'result')).toBe(whole);
  });

  it('a malformed result names its field', () => {
    expect(refusedField(() => proxyResultValue('text', 'reply.result'))).toBe('reply.result');
    expect(refusedField(() => proxyResultValue({ ...result, summary: undefined }, 'reply.result'))).toBe(
      'reply.result.summary',
    );
    expect(refusedField(() => proxyResultValue({ ...result, durationMs: '12' }, 'reply.result'))).toBe(
      'reply.result.durationMs',
    );
    expect(refusedField(() => proxyResultValue({ ...result, text: 3 }, 'reply.result'))).toBe('reply.result.text');
    expect(
      refusedField(() => proxyResultValue({ ...result, images: [{ data: 1, mimeType: 'image/png' }] }, 'reply.result')),
    ).toBe('reply.result.images[0].data');
    expect(
      refusedField(() =>
        proxyResultValue({ ...result, content: [{ type: 'text' }, { text: 'untyped' }] }, 'reply.result'),
      ),
    ).toBe('reply.result.content[1].type');
    expect(refusedField(() => proxyResultValue({ ...result, content: { type: 'text' } }, 'reply.result'))).toBe(
      'reply.result.content',
    );
    expect(
      refusedField(() =>
        proxyResultValue(
          { ...result, content: Array.from({ length: 1002 }, () => ({ type: 'text' })) },
          'reply.result',
        ),
      ),
    ).toBe('reply.result.content');
    expect(refusedField(() => proxyResultValue({ ...result, isError: false }, 'reply.result'))).toBe(
      'reply.result.isError',
    );
    expect(refusedField(() => proxyResultValue({ ...result, meta: [1] }, 'reply.result'))).toBe('reply.result.meta');
  });
});

describe('the tool-review-requested notification', () => {
  const cid = `b${'a'.repeat(40)}`;
  const event = {
    account: 'acct',
    server: 'github',
    changes: [{ tool: 'create issue', cid, kind: 'new', withheld: true }],
    pending: 3,
  };

  it('decodes to its fields only', () => {
    expect(decodeToolReviewRequestedEvent(encodePayload({ ...event, note: 'dropped' }))).toEqual(event);
  });

  it('refuses names outside their grammar, an unknown kind, a bad count and more than 100 changes', () => {
    const change = event.changes[0]!;
    expect(refusedField(() => decodeToolReviewRequestedEvent(encodePayload({ ...event, server: 'git hub' })))).toBe(
      'server',
    );
    expect(
      refusedField(() =>
        decodeToolReviewRequestedEvent(encodePayload({ ...event, changes: [{ ...change, tool: 'a\u0007b' }] })),
      ),
    ).toBe('changes[0].tool');
    expect(
      refusedField(() =>
        decodeToolReviewRequestedEvent(encodePayload({ ...event, changes: [{ ...change, cid: 'Qm' }] })),
      ),
    ).toBe('changes[0].cid');
    expect(
      refusedField(() =>
        decodeToolReviewRequestedEvent(encodePayload({ ...event, changes: [{ ...change, kind: 'gone' }] })),
      ),
    ).toBe('changes[0].kind');
    expect(refusedField(() => decodeToolReviewRequestedEvent(encodePayload({ ...event, pending: -1 })))).toBe(
      'pending',
    );
    expect(
      refusedField(() =>
        decodeToolReviewRequestedEvent(encodePayload({ ...event, changes: Array.from({ length: 101 }, () => change) })),
      ),
    ).toBe('changes');
  });
});

describe('a bound crossed inside a field names the field', () => {
  let deep: unknown = 'leaf';
  for (let i = 0; i < BODY_LIMITS.maxDepth + 80; i++) deep = [deep];
  const thrown = (fn: () => unknown): unknown => {
    try {
      fn();
    } catch (err) {
      return err;
    }
    throw new Error('expected a throw');
  };
  const body = { account: 'a', action: { type: 'InvokeTool', tool: 't', arguments: { deep } } };

  it('the decoder and the JSON walk both say the keys leading to it, at most two', () => {
    const fromCbor = thrown(() => decodeStrict(encodePayload(body), 'body', BODY_LIMITS)) as WireError;
    const fromJson = thrown(() => checkValueBounds(body, 'body', BODY_LIMITS)) as WireError;
    for (const err of [fromCbor, fromJson])
      expect(err.details).toMatchObject({
        field: 'body',
        rule: 'depth',
        limit: PAYLOAD_LIMITS.maxDepth,
        path: ['action', 'arguments'],
      });
    // An array on the way ends the path: its elements have no key.
    expect(
      (thrown(() => checkValueBounds({ list: [{ x: deep }] }, 'body', BODY_LIMITS)) as WireError).details.path,
    ).toEqual(['list']);
    expect(
      (thrown(() => decodeStrict(encodePayload({ list: [{ x: deep }] }), 'body', BODY_LIMITS)) as WireError).details
        .path,
    ).toEqual(['list']);
  });

  it('boundInField names the key at its level, with the rule and the bound; other errors pass as they are', () => {
    const err = thrown(() => checkValueBounds(body, 'body', BODY_LIMITS));
    expect((boundInField(err, 1) as WireError).details).toEqual({
      field: 'arguments',
      rule: 'depth',
      limit: PAYLOAD_LIMITS.maxDepth,
    });
    expect((boundInField(err, 0) as WireError).details).toMatchObject({ field: 'action' });
    expect(boundInField(err, 2)).toBe(err);
    const other = new Error('x');
    expect(boundInField(other, 0)).toBe(other);
  });
});
