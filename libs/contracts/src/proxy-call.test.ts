import { describe, expect, it } from 'vitest';
import { encodePayload } from './codec.js';
import { decodeToolReviewRequestedEvent } from './payload-decoders.js';
import { MAX_CALL_TIMEOUT_MS, decodeCallRequest, parseCallRequest, proxyResultValue } from './proxy-call.js';

import { refusedField } from './refused-field.test-support.js';

describe('the call request', () => {
  const base = { account: 'a', agent: 'b', run: 'r', callId: 'c', tool: 't', arguments: { q: 1 } };

  it('keeps the fields it names: null optional ids are absent, timeouts held to the maximum, only true answer flags', () => {
    expect(parseCallRequest({ ...base, approvalId: null, inputRequestId: null, extra: 'dropped' })).toEqual(base);
    expect(parseCallRequest({ ...base, arguments: undefined })).toEqual({ ...base, arguments: {} });
    expect(parseCallRequest({ ...base, timeoutMs: 10 * MAX_CALL_TIMEOUT_MS }).timeoutMs).toBe(MAX_CALL_TIMEOUT_MS);
    expect(parseCallRequest({ ...base, answers: { sampling: true, forms: false } }).answers).toEqual({ sampling: true });
    const resumed = parseCallRequest({ ...base, inputRequestId: 'inp_x1', inputResponses: { k: { action: 'accept' } } });
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

describe("the call reply's result", () => {
  const result = { summary: 'search · mcp', argument: 'mcp', text: 'found 2', result: { hits: [1, 2] }, images: [{ data: 'iVBO', mimeType: 'image/png' }], durationMs: 12 };

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
    expect(refusedField(() => proxyResultValue({ ...result, summary: undefined }, 'reply.result'))).toBe('reply.result.summary');
    expect(refusedField(() => proxyResultValue({ ...result, durationMs: '12' }, 'reply.result'))).toBe('reply.result.durationMs');
    expect(refusedField(() => proxyResultValue({ ...result, text: 3 }, 'reply.result'))).toBe('reply.result.text');
    expect(refusedField(() => proxyResultValue({ ...result, images: [{ data: 1, mimeType: 'image/png' }] }, 'reply.result'))).toBe('reply.result.images[0].data');
    expect(refusedField(() => proxyResultValue({ ...result, content: [{ type: 'text' }, { text: 'untyped' }] }, 'reply.result'))).toBe('reply.result.content[1].type');
    expect(refusedField(() => proxyResultValue({ ...result, content: { type: 'text' } }, 'reply.result'))).toBe('reply.result.content');
    expect(refusedField(() => proxyResultValue({ ...result, content: Array.from({ length: 1002 }, () => ({ type: 'text' })) }, 'reply.result'))).toBe('reply.result.content');
    expect(refusedField(() => proxyResultValue({ ...result, isError: false }, 'reply.result'))).toBe('reply.result.isError');
    expect(refusedField(() => proxyResultValue({ ...result, meta: [1] }, 'reply.result'))).toBe('reply.result.meta');
  });
});

describe('the tool-review-requested notification', () => {
  const cid = `b${'a'.repeat(40)}`;
  const event = { account: 'acct', server: 'github', changes: [{ tool: 'create issue', cid, kind: 'new', withheld: true }], pending: 3 };

  it('decodes to its fields only', () => {
    expect(decodeToolReviewRequestedEvent(encodePayload({ ...event, note: 'dropped' }))).toEqual(event);
  });

  it('refuses names outside their grammar, an unknown kind, a bad count and more than 100 changes', () => {
    const change = event.changes[0]!;
    expect(refusedField(() => decodeToolReviewRequestedEvent(encodePayload({ ...event, server: 'git hub' })))).toBe('server');
    expect(refusedField(() => decodeToolReviewRequestedEvent(encodePayload({ ...event, changes: [{ ...change, tool: 'a\u0007b' }] })))).toBe('changes[0].tool');
    expect(refusedField(() => decodeToolReviewRequestedEvent(encodePayload({ ...event, changes: [{ ...change, cid: 'Qm' }] })))).toBe('changes[0].cid');
    expect(refusedField(() => decodeToolReviewRequestedEvent(encodePayload({ ...event, changes: [{ ...change, kind: 'gone' }] })))).toBe('changes[0].kind');
    expect(refusedField(() => decodeToolReviewRequestedEvent(encodePayload({ ...event, pending: -1 })))).toBe('pending');
    expect(refusedField(() => decodeToolReviewRequestedEvent(encodePayload({ ...event, changes: Array.from({ length: 101 }, () => change) })))).toBe('changes');
  });
});
