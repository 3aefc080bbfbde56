import { describe, expect, it } from 'vitest';
import {
  contractCid,
  diffContracts,
  diffSchemas,
  diffText,
  documentContractCid,
  inputCompatible,
  toolContract,
} from './contract-diff.js';
import { buildToolDocuments } from './document.js';
import { ToolNameStyle } from './types.js';

const schema = {
  type: 'object',
  properties: { to: { type: 'string' }, n: { type: 'integer', maximum: 10 } },
  required: ['to'],
};

describe('contract CIDs', () => {
  it('equal contracts have equal CIDs whatever their key order; any contract field changes it', () => {
    const a = { name: 'send', description: 'Send.', inputSchema: schema, annotations: { readOnlyHint: true } };
    const b = {
      annotations: { readOnlyHint: true },
      inputSchema: { required: ['to'], properties: schema.properties, type: 'object' },
      description: 'Send.',
      name: 'send',
    };
    expect(contractCid(a)).toBe(contractCid(b));
    expect(contractCid({ ...a, description: 'Send it.' })).not.toBe(contractCid(a));
    expect(contractCid({ ...a, title: 'Send' })).not.toBe(contractCid(a));
    expect(contractCid({ ...a, annotations: { readOnlyHint: false } })).not.toBe(contractCid(a));
    expect(contractCid({ ...a, outputSchema: { type: 'object' } })).not.toBe(contractCid(a));
    // The name is not part of the contract (a rename is another tool, told apart by name).
    expect(contractCid({ ...a, name: 'other' })).toBe(contractCid(a));
    // Unknown annotation fields are not part of what a document carries.
    expect(contractCid({ ...a, annotations: { readOnlyHint: true, vendorThing: 1 } as never })).toBe(contractCid(a));
  });
});

describe('documentContractCid', () => {
  it('is the contract CID of the remote tool the document was built from, whatever the name style, level or override', () => {
    const tools = [
      {
        name: 'send',
        description: '  Send.  ',
        inputSchema: schema,
        annotations: { readOnlyHint: true, vendorThing: 1 } as never,
      },
      { name: 'bare' },
      {
        name: 'titled',
        title: 'Titled',
        inputSchema: { type: 'object' },
        outputSchema: { type: 'object', properties: { ok: { type: 'boolean' } } },
        annotations: { destructiveHint: true },
      },
      { name: 'annotated-title', annotations: { title: ' From annotations ' } },
      {
        name: 'long',
        description: 'x'.repeat(200_000),
        inputSchema: { type: 'object', properties: { a: { type: 'string' } } },
      },
    ];
    for (const style of [ToolNameStyle.double_underscore, ToolNameStyle.prefixed]) {
      const docs = buildToolDocuments('mail', tools, { style, overrides: { send: 'always_ask' } });
      expect(docs).toHaveLength(tools.length);
      for (const doc of docs)
        expect(documentContractCid(doc)).toBe(contractCid(tools.find((t) => t.name === doc.remoteName)!));
    }
    const [doc] = buildToolDocuments('mail', [tools[0]!], { style: ToolNameStyle.double_underscore });
    expect(documentContractCid({ ...doc!, description: 'Send it.' })).not.toBe(contractCid(tools[0]!));
  });
});

describe('diffText', () => {
  it('a word diff that keeps the common words', () => {
    expect(diffText('Send an email.', 'Send an email to everyone.')).toEqual([
      { op: 'same', text: 'Send an ' },
      { op: 'removed', text: 'email.' },
      { op: 'added', text: 'email to everyone.' },
    ]);
    expect(diffText('', 'new')).toEqual([{ op: 'added', text: 'new' }]);
    expect(diffText('same', 'same')).toEqual([{ op: 'same', text: 'same' }]);
  });
  it('very long texts are shown removed and added whole (bounded work)', () => {
    const long = 'w '.repeat(3000);
    expect(diffText(long, `${long}x`)).toHaveLength(2);
  });
});

describe('diffSchemas', () => {
  it('properties, types, enums, defaults, required and other keywords', () => {
    const after = {
      type: 'object',
      properties: { to: { type: 'string', enum: ['a', 'b'], default: 'a' }, cc: { type: 'string' } },
      required: ['to', 'cc'],
    };
    const changes = diffSchemas(schema, after);
    expect(changes).toEqual(
      expect.arrayContaining([
        { path: '/cc', aspect: 'required', kind: 'added' },
        { path: '/cc', aspect: 'property', kind: 'added', after: { type: 'string' } },
        { path: '/n', aspect: 'property', kind: 'removed', before: { type: 'integer', maximum: 10 } },
        { path: '/to', aspect: 'enum', kind: 'added', after: ['a', 'b'] },
        { path: '/to', aspect: 'default', kind: 'added', after: 'a' },
      ]),
    );
    expect(
      diffSchemas(
        { type: 'object', properties: { x: { type: 'string' } } },
        { type: 'object', properties: { x: { type: 'number' } } },
      ),
    ).toEqual([{ path: '/x', aspect: 'type', kind: 'changed', before: 'string', after: 'number' }]);
  });
  it('contract diffs name annotations and the title', () => {
    const before = toolContract({ name: 't', description: 'Reads.', annotations: { readOnlyHint: true } });
    const after = toolContract({
      name: 't',
      title: 'T',
      description: 'Reads.',
      annotations: { destructiveHint: true },
    });
    const d = diffContracts(before, after);
    expect(d.descriptionChanged).toBe(false);
    expect(d.title).toEqual({ after: 'T' });
    expect(d.annotations).toEqual([
      { key: 'destructiveHint', after: true },
      { key: 'readOnlyHint', before: true },
    ]);
  });
});

describe('inputCompatible', () => {
  const ok = (a: unknown, b: unknown) => inputCompatible(a, b).compatible;
  it('descriptions, new optional properties, wider types, enums and bounds keep it compatible', () => {
    expect(ok(schema, { ...schema, description: 'now described' })).toBe(true);
    expect(ok(schema, { ...schema, properties: { ...schema.properties, extra: { type: 'string' } } })).toBe(true);
    expect(ok(schema, { ...schema, properties: { ...schema.properties, n: { type: 'number', maximum: 20 } } })).toBe(
      true,
    );
    expect(ok({ properties: { c: { enum: ['a'] } } }, { properties: { c: { enum: ['a', 'b'] } } })).toBe(true);
    expect(ok(schema, { ...schema, required: [] })).toBe(true);
  });
  it('a new required property, a narrower type, enum or bound, a closed object, or an unknown keyword make it incompatible', () => {
    expect(inputCompatible(schema, { ...schema, required: ['to', 'n'] }).reasons).toEqual([
      'the input: n is now required',
    ]);
    expect(ok(schema, { ...schema, properties: { ...schema.properties, n: { type: 'integer', maximum: 5 } } })).toBe(
      false,
    );
    expect(ok(schema, { ...schema, properties: { ...schema.properties, to: { type: 'number' } } })).toBe(false);
    expect(ok({ properties: { c: { enum: ['a', 'b'] } } }, { properties: { c: { enum: ['a'] } } })).toBe(false);
    expect(ok(schema, { ...schema, additionalProperties: false })).toBe(false);
    expect(ok(schema, { ...schema, properties: { ...schema.properties, to: { anyOf: [{ type: 'string' }] } } })).toBe(
      false,
    );
    expect(
      ok({ properties: { s: { type: 'string' } } }, { properties: { s: { type: 'string', pattern: '^a' } } }),
    ).toBe(false);
  });
});
