import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Permission, ToolNameStyle } from './types.js';
import type { RemoteTool } from './types.js';
import { DESCRIPTION_MAX_BYTES, buildToolDocuments, normalizeAnnotations } from './document.js';
import { encodeCanonical } from './cid.js';
import { utf8ByteLength } from './utf8.js';

const style = ToolNameStyle.double_underscore;

describe('buildToolDocuments', () => {
  it('projects a remote tool into a complete document', () => {
    const [doc] = buildToolDocuments(
      'github',
      [
        {
          name: 'create_issue',
          title: 'Create issue',
          description: '  Open an issue.  ',
          inputSchema: { $schema: 'x', type: 'object', properties: { title: { type: 'string' } } },
          outputSchema: { type: 'object' },
          annotations: { destructiveHint: false, openWorldHint: true },
        },
      ],
      { style },
    );
    expect(doc).toEqual({
      kind: 'mcp',
      name: 'github__create_issue',
      title: 'Create issue',
      description: 'Open an issue.',
      inputSchema: { type: 'object', properties: { title: { type: 'string' } } },
      outputSchema: { type: 'object' },
      annotations: { destructiveHint: false, openWorldHint: true },
      permission: Permission.act,
      server: 'github',
      remoteName: 'create_issue',
    });
  });

  it('omits absent fields instead of setting them undefined', () => {
    const [doc] = buildToolDocuments('s', [{ name: 'x' }], { style });
    expect(doc).toEqual({
      kind: 'mcp',
      name: 's__x',
      description: '',
      inputSchema: { type: 'object' },
      permission: 'act',
      server: 's',
      remoteName: 'x',
    });
    expect(Object.keys(doc!).sort()).toEqual([
      'description',
      'inputSchema',
      'kind',
      'name',
      'permission',
      'remoteName',
      'server',
    ]);
  });

  it('takes the title from annotations when the tool has none', () => {
    const [doc] = buildToolDocuments('s', [{ name: 'x', annotations: { title: 'From hints' } }], { style });
    expect(doc?.title).toBe('From hints');
  });

  it('inherits permission, lets the owner override it, and uses the heuristic for built-ins', () => {
    const tools: RemoteTool[] = [
      { name: 'drop', annotations: { destructiveHint: true } },
      { name: 'read', annotations: { readOnlyHint: true } },
      { name: 'create_thing' },
      { name: 'constructor' },
    ];
    const byName = (docs: ReturnType<typeof buildToolDocuments>) =>
      Object.fromEntries(docs.map((d) => [d.remoteName, d.permission]));
    expect(byName(buildToolDocuments('s', tools, { style }))).toEqual({
      drop: 'always_ask',
      read: 'act',
      create_thing: 'act',
      constructor: 'act',
    });
    expect(byName(buildToolDocuments('s', tools, { style, builtin: true }))).toEqual({
      drop: 'always_ask',
      read: 'act',
      create_thing: 'always_ask',
      constructor: 'always_ask',
    });
    const overrides = { drop: Permission.act, create_thing: Permission.always_ask, read: 'bogus' as Permission };
    expect(byName(buildToolDocuments('s', tools, { style, overrides }))).toEqual({
      drop: 'act',
      read: 'act',
      create_thing: 'always_ask',
      constructor: 'act',
    });
  });

  it('skips nameless entries, keeps the first of a repeated name and bounds the description', () => {
    const tools = [
      { name: 'a', description: 'first' },
      { name: 'a', description: 'second' },
      { description: 'no name' },
      null,
      { name: 'b', description: 'é'.repeat(DESCRIPTION_MAX_BYTES) },
    ] as unknown as RemoteTool[];
    const docs = buildToolDocuments('s', tools, { style });
    expect(docs.map((d) => d.name)).toEqual(['s__a', 's__b']);
    expect(docs[0]?.description).toBe('first');
    expect(utf8ByteLength(docs[1]!.description)).toBeLessThanOrEqual(DESCRIPTION_MAX_BYTES);
    expect(docs[1]!.description.endsWith('…')).toBe(true);
  });

  it('uses the prefixed style when asked', () => {
    expect(buildToolDocuments('acme', [{ name: 'search docs' }], { style: ToolNameStyle.prefixed })[0]?.name).toBe(
      'mcp_acme_search_docs',
    );
  });

  it('always yields documents dag-cbor can encode, whatever the server sends', () => {
    const anyTool = fc.record(
      {
        name: fc.oneof(fc.string(), fc.constant(undefined)),
        title: fc.anything(),
        description: fc.anything(),
        inputSchema: fc.anything(),
        outputSchema: fc.anything(),
        annotations: fc.anything(),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(fc.array(anyTool, { maxLength: 6 }), fc.boolean(), (tools, builtin) => {
        const docs = buildToolDocuments('srv', tools as unknown as RemoteTool[], { style, builtin });
        for (const doc of docs) {
          expect(() => encodeCanonical(doc)).not.toThrow();
          expect(doc.inputSchema.type).toBe('object');
        }
        expect(new Set(docs.map((d) => d.name)).size).toBe(docs.length);
      }),
    );
  });
});

describe('normalizeAnnotations', () => {
  it('keeps only known, well-typed fields', () => {
    expect(normalizeAnnotations({ title: ' T ', readOnlyHint: true, destructiveHint: 'yes', extra: 1 })).toEqual({
      title: 'T',
      readOnlyHint: true,
    });
    expect(normalizeAnnotations({ extra: 1 })).toBeUndefined();
    expect(normalizeAnnotations('x')).toBeUndefined();
  });
});
