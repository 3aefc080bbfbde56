import { describe, expect, it } from 'vitest';
import { DEFAULT_AUDIT_RETENTION_DAYS, parsePinAudit } from '@mcpx/config';

/** The operator's settings of pinning and the audit log: PIN_DEFAULT, PIN_WRITERS_MAY_REVIEW, AUDIT_RETENTION_DAYS. */
describe('pinning and audit settings', () => {
  it('defaults: new servers unpinned, only OWNERs review, entries kept 400 days', () => {
    expect(parsePinAudit({})).toEqual({
      pinDefault: 'off',
      writersMayReview: false,
      auditRetentionDays: DEFAULT_AUDIT_RETENTION_DAYS,
    });
    expect(DEFAULT_AUDIT_RETENTION_DAYS).toBe(400);
  });
  it('the operator sets each', () => {
    expect(
      parsePinAudit({ PIN_DEFAULT: 'strict', PIN_WRITERS_MAY_REVIEW: 'true', AUDIT_RETENTION_DAYS: '30' }),
    ).toEqual({ pinDefault: 'strict', writersMayReview: true, auditRetentionDays: 30 });
    expect(
      parsePinAudit({ PIN_DEFAULT: 'review', PIN_WRITERS_MAY_REVIEW: 'false', AUDIT_RETENTION_DAYS: '0' }),
    ).toEqual({ pinDefault: 'review', writersMayReview: false, auditRetentionDays: 0 });
  });
  it('anything else refuses to start, naming the variable', () => {
    expect(() => parsePinAudit({ PIN_DEFAULT: 'sometimes' })).toThrow(/PIN_DEFAULT/);
    expect(() => parsePinAudit({ PIN_WRITERS_MAY_REVIEW: 'yes' })).toThrow(/PIN_WRITERS_MAY_REVIEW/);
    for (const days of ['-1', '1.5', 'forever'])
      expect(() => parsePinAudit({ AUDIT_RETENTION_DAYS: days })).toThrow(/AUDIT_RETENTION_DAYS/);
  });
});
