import { describe, expect, it } from 'vitest';
import { auditView, parseAuditQuery } from './audit-log.js';

describe('auditView', () => {
  it('replaces every secret-named field, at any depth, and keeps the rest', () => {
    const view = auditView({
      url: 'https://x',
      config: { token: 't0k', secretHeaders: { A: 'v' }, headers: { B: 'plain' } },
      oauth: { clientSecret: 's', privateKey: 'k', clientId: 'id' },
      call: { arguments: { q: 1 } },
      list: [{ password: 'p' }],
    });
    expect(view).toEqual({
      url: 'https://x',
      config: { token: '[redacted]', secretHeaders: '[redacted]', headers: { B: 'plain' } },
      oauth: { clientSecret: '[redacted]', privateKey: '[redacted]', clientId: 'id' },
      call: { arguments: '[redacted]' },
      list: [{ password: '[redacted]' }],
    });
    expect(JSON.stringify(view)).not.toMatch(/t0k|"v"|"s"|"k"|"p"/);
  });
});

describe('parseAuditQuery', () => {
  it('defaults, bounds and filters; every error names its field', () => {
    expect(parseAuditQuery({})).toEqual({ limit: 50 });
    expect(
      parseAuditQuery({ limit: 200, cursor: '12', action: 'SetMcpServer', since: '2026-12-01T00:00:00Z' }),
    ).toMatchObject({ limit: 200, cursor: 12, action: 'SetMcpServer' });
    for (const [input, field] of [
      [{ limit: 201 }, 'limit'],
      [{ limit: 1.5 }, 'limit'],
      [{ cursor: '0' }, 'cursor'],
      [{ cursor: 5 }, 'cursor'],
      [{ signer: '' }, 'signer'],
      [{ until: 'later' }, 'until'],
      [{ targetKind: 'x'.repeat(300) }, 'targetKind'],
    ] as const) {
      expect(() => parseAuditQuery(input as Record<string, unknown>)).toThrow(
        expect.objectContaining({ code: 'invalid_input', details: { field } }),
      );
    }
  });
});
