import { describe, expect, it } from 'vitest';
import type { ApprovalRecord, ConsumeReason } from '@mcpx/shared-state';
import { argumentsHash, consumeRefusal } from './approval-gate.js';

const doc = { name: 'github__delete_repo', server: 'github' };
const record = {} as ApprovalRecord;

describe('consumeRefusal: what a consumed approval means for the call', () => {
  it('lets the call go ahead with an approval given for it', () => {
    expect(consumeRefusal({ ok: true, record }, 'ap1', doc)).toBeUndefined();
  });

  it('keeps the call waiting (approval_required, the same approval) while no human has decided', () => {
    const err = consumeRefusal({ ok: false, reason: 'pending' }, 'ap1', doc);
    expect(err?.code).toBe('approval_required');
    expect(err?.details).toEqual({ approvalId: 'ap1', tool: doc.name, server: 'github' });
  });

  it('refuses every other outcome with its reason, and never lets the call run', () => {
    const reasons: ConsumeReason[] = ['unknown', 'expired', 'denied', 'used', 'mismatch'];
    for (const reason of reasons) {
      const err = consumeRefusal({ ok: false, reason }, 'ap1', doc);
      expect(err?.code, reason).toBe('approval_refused');
      expect(err?.details).toEqual({ approvalId: 'ap1', reason, tool: doc.name });
      expect(err?.message.startsWith(`${doc.name}: `)).toBe(true);
    }
  });
});

describe('argumentsHash: what an approval is bound to', () => {
  it('does not depend on key order', () => {
    expect(argumentsHash({ a: 1, b: { c: 'x', d: [1, 2] } })).toBe(argumentsHash({ b: { d: [1, 2], c: 'x' }, a: 1 }));
  });

  it('tells different arguments apart', () => {
    expect(argumentsHash({ repo: 'a' })).not.toBe(argumentsHash({ repo: 'b' }));
  });

  it('refuses arguments with no canonical encoding, naming the field', () => {
    expect(() => argumentsHash({ n: Number.NaN })).toThrow(
      expect.objectContaining({ code: 'invalid_arguments', details: { field: 'arguments' } }),
    );
  });
});
