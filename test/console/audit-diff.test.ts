import { describe, expect, it } from 'vitest';
import { auditChanges, shortValue } from '../../console/public/audit-diff.js';

/** The audit log's before and after as the console shows them: field by field, only what changed. */
describe('the console: an audit change field by field', () => {
  it('names each changed, added and removed field by its path, and leaves out what stayed', () => {
    const before = { url: 'https://a.example/mcp', auth: 'none', pin: 'off', headers: { 'X-Tenant': 'acme' } };
    const after = {
      url: 'https://a.example/mcp',
      auth: 'oauth',
      headers: { 'X-Tenant': 'acme', 'X-Region': 'eu' },
      transport: 'http',
    };
    expect(auditChanges(before, after)).toEqual([
      { field: 'auth', kind: 'changed', before: 'none', after: 'oauth' },
      { field: 'pin', kind: 'removed', before: 'off', after: '—' },
      { field: 'headers.X-Region', kind: 'added', before: '—', after: 'eu' },
      { field: 'transport', kind: 'added', before: '—', after: 'http' },
    ]);
  });

  it('a creation is every field added; a deletion every field removed; equal values nothing', () => {
    expect(auditChanges(undefined, { permission: 'always_ask' })).toEqual([
      { field: 'permission', kind: 'added', before: '—', after: 'always_ask' },
    ]);
    expect(auditChanges({ grants: ['a', 'b'] }, undefined)).toEqual([
      { field: 'grants', kind: 'removed', before: '["a","b"]', after: '—' },
    ]);
    expect(auditChanges({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] })).toEqual([]);
    // A value that is not an object is one field.
    expect(auditChanges('act', 'always_ask')).toEqual([
      { field: '(value)', kind: 'changed', before: 'act', after: 'always_ask' },
    ]);
  });

  it('keeps each value short and stops opening objects past a depth', () => {
    expect(shortValue('x'.repeat(500))).toHaveLength(161);
    const deep = { a: { b: { c: { d: { e: { f: 1 } } } } } };
    expect(auditChanges({}, deep)).toEqual([{ field: 'a.b.c.d', kind: 'added', before: '—', after: '{"e":{"f":1}}' }]);
  });
});
