import { describe, expect, it } from 'vitest';
import { WireError } from './errors.js';
import { INPUT_LIMITS } from './inputs.js';
import { checkElicitAnswer, checkElicitContent, checkRequestedSchema } from './input-checks.js';

const fieldOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (err) {
    if (err instanceof WireError && err.code === 'invalid_input') return err.details.field as string;
    throw err;
  }
  return undefined;
};

/** SEP-1330's titled enum forms, written as a server writes them and kept as they are. */
const PLAN = {
  type: 'string',
  oneOf: [
    { const: 'free', title: 'Free' },
    { const: 'team', title: 'Team' },
  ],
};
const FEATURES = {
  type: 'array',
  items: {
    anyOf: [
      { const: 'sso', title: 'SSO' },
      { const: 'audit', title: 'Audit' },
    ],
  },
  maxItems: 2,
};

describe('the restricted elicitation schema', () => {
  const schema = checkRequestedSchema({
    type: 'object',
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    properties: {
      email: { type: 'string', format: 'email', title: 'Email', pattern: '.*' },
      when: { type: 'string', format: 'date-time' },
      seats: { type: 'integer', minimum: 1, maximum: 10 },
      ratio: { type: 'number', minimum: 0, maximum: 1 },
      admin: { type: 'boolean', default: false },
      plan: PLAN,
      size: { type: 'string', enum: ['s', 'm'], enumNames: ['Small', 'Medium'] },
      features: FEATURES,
      note: { type: 'string', minLength: 2, maxLength: 5 },
    },
    required: ['email', 'seats'],
  });

  it('keeps only what a form shows and an answer is checked against', () => {
    expect(schema.properties.email).toEqual({ type: 'string', format: 'email', title: 'Email' });
    // SEP-1330's enum forms stay as the server wrote them: titled oneOf / anyOf, untitled enum, legacy enumNames.
    expect(schema.properties.plan).toEqual(PLAN);
    expect(schema.properties.size).toEqual({ type: 'string', enum: ['s', 'm'], enumNames: ['Small', 'Medium'] });
    expect(schema.properties.features).toEqual(FEATURES);
    expect('$schema' in schema).toBe(false);
  });

  it('refuses what a flat form cannot hold, naming the place', () => {
    expect(
      fieldOf(() => checkRequestedSchema({ type: 'object', properties: { a: { type: 'object', properties: {} } } })),
    ).toBe('requestedSchema.properties.a.type');
    expect(fieldOf(() => checkRequestedSchema({ type: 'array' }))).toBe('requestedSchema');
    expect(
      fieldOf(() => checkRequestedSchema({ type: 'object', properties: { a: { type: 'string', format: 'ipv4' } } })),
    ).toBe('requestedSchema.properties.a.format');
    expect(
      fieldOf(() =>
        checkRequestedSchema({ type: 'object', properties: { a: { type: 'array', items: { type: 'number' } } } }),
      ),
    ).toBe('requestedSchema.properties.a.items');
    expect(
      fieldOf(() => checkRequestedSchema({ type: 'object', properties: { a: { type: 'string' } }, required: ['b'] })),
    ).toBe('requestedSchema.required');
    expect(fieldOf(() => checkRequestedSchema({ type: 'object', properties: { 'a b': { type: 'string' } } }))).toBe(
      'requestedSchema.properties',
    );
    const many = Object.fromEntries(
      Array.from({ length: INPUT_LIMITS.properties + 1 }, (_, i) => [`p${i}`, { type: 'string' }]),
    );
    expect(fieldOf(() => checkRequestedSchema({ type: 'object', properties: many }))).toBe(
      'requestedSchema.properties',
    );
    expect(
      fieldOf(() =>
        checkRequestedSchema({
          type: 'object',
          properties: { a: { type: 'string', enum: Array.from({ length: 101 }, (_, i) => `v${i}`) } },
        }),
      ),
    ).toBe('requestedSchema.properties.a.enum');
    // A hostile title is cut, not refused.
    expect(
      String(
        checkRequestedSchema({ type: 'object', properties: { a: { type: 'string', title: 'x'.repeat(10_000) } } })
          .properties.a?.title,
      ).length,
    ).toBe(INPUT_LIMITS.titleChars);
  });

  it('checks an answer against it: types, bounds, formats, options, required fields, no extra field', () => {
    expect(
      checkElicitContent(schema, { email: 'a@b.co', seats: 3, features: ['audit'], when: '2026-12-01T10:00:00Z' }),
    ).toEqual({
      email: 'a@b.co',
      seats: 3,
      features: ['audit'],
      when: '2026-12-01T10:00:00Z',
    });
    expect(fieldOf(() => checkElicitContent(schema, { email: 'not-an-email', seats: 3 }))).toBe('content.email');
    expect(fieldOf(() => checkElicitContent(schema, { email: 'a@b.co', seats: 11 }))).toBe('content.seats');
    expect(fieldOf(() => checkElicitContent(schema, { email: 'a@b.co', seats: 2.5 }))).toBe('content.seats');
    expect(fieldOf(() => checkElicitContent(schema, { email: 'a@b.co', seats: 2, ratio: Number.NaN }))).toBe(
      'content.ratio',
    );
    expect(fieldOf(() => checkElicitContent(schema, { email: 'a@b.co', seats: 2, plan: 'gold' }))).toBe('content.plan');
    expect(fieldOf(() => checkElicitContent(schema, { email: 'a@b.co', seats: 2, features: ['sso', 'sso'] }))).toBe(
      'content.features',
    );
    expect(fieldOf(() => checkElicitContent(schema, { email: 'a@b.co', seats: 2, note: 'x' }))).toBe('content.note');
    expect(fieldOf(() => checkElicitContent(schema, { email: 'a@b.co', seats: 2, when: 'tomorrow' }))).toBe(
      'content.when',
    );
    expect(fieldOf(() => checkElicitContent(schema, { email: 'a@b.co' }))).toBe('content.seats');
    expect(fieldOf(() => checkElicitContent(schema, { email: 'a@b.co', seats: 2, extra: 1 }))).toBe('content.extra');
    expect(
      fieldOf(() =>
        checkElicitContent(schema, { email: 'a@b.co', seats: 2, note: 'x'.repeat(INPUT_LIMITS.answerBytes) }),
      ),
    ).toBe('content');
    expect(fieldOf(() => checkElicitContent(schema, ['a']))).toBe('content');
  });

  it('an answer: accept with content, decline and cancel without', () => {
    expect(checkElicitAnswer({ action: 'decline' }, schema)).toEqual({ action: 'decline' });
    expect(fieldOf(() => checkElicitAnswer({ action: 'decline', content: { email: 'a@b.co' } }, schema))).toBe(
      'answer.content',
    );
    expect(fieldOf(() => checkElicitAnswer({ action: 'maybe' }, schema))).toBe('answer.action');
    expect(checkElicitAnswer({ action: 'accept' }, undefined)).toEqual({ action: 'accept' });
  });
});
