import { describe, expect, it } from 'vitest';
import { encodePayload } from './codec.js';
import {
  decodeClientDeclared,
  decodeForwardedAnswer,
  decodeTokenDecisionAudit,
  forwardedAnswerReplyValue,
  tokenDecisionAuditReplyValue,
} from './endpoint-messages.js';

import { refusedField } from './refused-field.test-support.js';

describe("the endpoint's messages", () => {
  it('a forwarded answer keeps its checked fields only; a malformed one is refused naming the field', () => {
    expect(
      decodeForwardedAnswer(
        encodePayload({ token: 'tok_1', id: 'mcpx-q.a.1', result: { action: 'accept' }, extra: 1 }),
      ),
    ).toEqual({
      token: 'tok_1',
      id: 'mcpx-q.a.1',
      result: { action: 'accept' },
    });
    expect(decodeForwardedAnswer(encodePayload({ token: 'tok_1', id: 'q' }))).toEqual({ token: 'tok_1', id: 'q' });
    expect(refusedField(() => decodeForwardedAnswer(encodePayload({ token: 1, id: 'q' })))).toBe('token');
    expect(refusedField(() => decodeForwardedAnswer(encodePayload({ token: 't', id: 'q', result: ['x'] })))).toBe(
      'result',
    );
    expect(refusedField(() => decodeForwardedAnswer(encodePayload(['t'])))).toBe('answer');
    expect(forwardedAnswerReplyValue({ taken: true }, 'reply.value')).toEqual({ taken: true });
    expect(refusedField(() => forwardedAnswerReplyValue({ taken: 'yes' }, 'reply.value'))).toBe('reply.value.taken');
  });

  it("a client's declaration names its instance and token and both capabilities as booleans", () => {
    const declared = { instance: 'endpoint-1', token: 'tok_1', elicitation: true, sampling: false };
    expect(decodeClientDeclared(encodePayload(declared))).toEqual(declared);
    expect(refusedField(() => decodeClientDeclared(encodePayload({ ...declared, instance: undefined })))).toBe(
      'instance',
    );
    expect(refusedField(() => decodeClientDeclared(encodePayload({ ...declared, sampling: 'true' })))).toBe('sampling');
  });

  it('a token decision to audit names an account and an approval, nothing else; the reply says recorded or already', () => {
    expect(
      decodeTokenDecisionAudit(encodePayload({ account: 'acct', approvalId: 'apr_1', decision: 'approved' })),
    ).toEqual({ account: 'acct', approvalId: 'apr_1' });
    expect(refusedField(() => decodeTokenDecisionAudit(encodePayload({ account: 'acct', approvalId: '' })))).toBe(
      'approvalId',
    );
    expect(refusedField(() => decodeTokenDecisionAudit(encodePayload({ approvalId: 'apr_1' })))).toBe('account');
    expect(tokenDecisionAuditReplyValue({ audit: 'already' }, 'reply.value')).toEqual({ audit: 'already' });
    expect(refusedField(() => tokenDecisionAuditReplyValue({ audit: 'maybe' }, 'reply.value'))).toBe(
      'reply.value.audit',
    );
  });
});
