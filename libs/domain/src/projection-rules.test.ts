import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import * as dagCbor from '@ipld/dag-cbor';
import { CID } from 'multiformats/cid';
import { sha256 } from 'multiformats/hashes/sha2';
import { ToolNameStyle } from './types.js';
import { buildToolDocuments } from './document.js';
import { documentCid } from './cid.js';
import { projectToolNames, serverToolPrefix } from './names.js';
import { SCHEMA_MAX_BYTES, normalizeInputSchema } from './schema.js';
import { LambdaDocumentError, buildLambdaDocument, providerTools } from './lambda.js';

const DU = ToolNameStyle.double_underscore;
const PX = ToolNameStyle.prefixed;
const NAME_RE = /^[A-Za-z0-9_-]{1,64}$/;

async function referenceCid(value: unknown): Promise<string> {
  return CID.create(1, dagCbor.code, await sha256.digest(dagCbor.encode(value))).toString();
}

/** The projection rules (docs/names.md), over the remote names and schemas servers really send. */
describe('projection rules on hostile remote input', () => {
  it('projects unicode, empty and 500-character remote names to distinct, bounded, well-formed names', () => {
    const remotes = [
      '创建问题',
      'créer_ticket',
      'café ☕',
      '😀',
      '',
      'tool',
      'x'.repeat(500),
      `${'x'.repeat(499)}y`,
      'a\u0000b',
      'Ω'.repeat(500),
    ];
    for (const style of [DU, PX]) {
      const names = projectToolNames('srv', remotes, style);
      expect(names.size).toBe(remotes.length);
      expect(new Set(names.values()).size).toBe(remotes.length);
      for (const name of names.values()) {
        expect(name).toMatch(NAME_RE);
        expect(name.startsWith(serverToolPrefix('srv', style))).toBe(true);
      }
    }
    const names = projectToolNames('srv', remotes, DU);
    // Sanitising leaves only the ASCII run of a mixed name.
    expect(names.get('créer_ticket')).toBe('srv__cr_er_ticket');
    // '', '😀', '创建问题' and 'tool' all sanitise to `tool`: every one of them is suffixed.
    for (const r of ['', '😀', '创建问题', 'tool']) expect(names.get(r)).toMatch(/^srv__tool_[0-9a-f]{6,}$/);
    // Two 500-character names meeting after the cap are both suffixed, within 64 characters.
    expect(names.get('x'.repeat(500))).toHaveLength(64);
    expect(names.get('x'.repeat(500))).not.toBe(names.get(`${'x'.repeat(499)}y`));
  });

  it('is stable: the same remote list always projects to the same names and CIDs', () => {
    const tool = fc.record({
      name: fc.string({ unit: 'grapheme', maxLength: 600 }),
      description: fc.string({ unit: 'grapheme', maxLength: 50 }),
    });
    fc.assert(
      fc.property(fc.array(tool, { maxLength: 12 }), fc.constantFrom(DU, PX), (tools, style) => {
        const a = buildToolDocuments('srv', tools, { style });
        const b = buildToolDocuments('srv', structuredClone(tools), { style });
        expect(a.map((d) => [d.name, documentCid(d)])).toEqual(b.map((d) => [d.name, documentCid(d)]));
        for (const d of a) expect(d.name).toMatch(NAME_RE);
        expect(new Set(a.map((d) => d.name)).size).toBe(a.length);
      }),
      { numRuns: 60 },
    );
  });

  it('keeps $ref schemas and large enums whole, and replaces only what is too big or not an object', () => {
    const withRef = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      $ref: '#/$defs/q',
      $defs: { q: { type: 'object', properties: { a: { $ref: '#/$defs/q' } } } },
    };
    expect(normalizeInputSchema(withRef)).toEqual({ $ref: '#/$defs/q', $defs: withRef.$defs, type: 'object' });

    const bigEnum = {
      type: 'object',
      properties: { color: { type: 'string', enum: Array.from({ length: 5_000 }, (_, i) => `color-${i}`) } },
    };
    expect(normalizeInputSchema(bigEnum)).toEqual(bigEnum);
    const hugeEnum = {
      type: 'object',
      properties: { n: { enum: Array.from({ length: SCHEMA_MAX_BYTES / 4 }, (_, i) => i) } },
    };
    expect(normalizeInputSchema(hugeEnum)).toEqual({ type: 'object' });

    for (const root of [[{ type: 'object' }], 'object', 42, null, { type: 'array', items: {} }]) {
      const [doc] = buildToolDocuments('srv', [{ name: 'x', inputSchema: root }], { style: DU });
      expect(doc!.inputSchema).toEqual({ type: 'object' });
    }
  });

  it('computes the same CID as @ipld/dag-cbor + multiformats for documents built from any remote tools', async () => {
    const tool = fc.record(
      {
        name: fc.string({ unit: 'grapheme', maxLength: 80 }),
        title: fc.string({ maxLength: 20 }),
        description: fc.string({ unit: 'grapheme', maxLength: 200 }),
        inputSchema: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 5 }),
        annotations: fc.record({ readOnlyHint: fc.boolean(), destructiveHint: fc.boolean() }, { requiredKeys: [] }),
      },
      { requiredKeys: ['name'] },
    );
    await fc.assert(
      fc.asyncProperty(fc.array(tool, { maxLength: 5 }), async (tools) => {
        for (const doc of buildToolDocuments('srv', tools, { style: DU }))
          expect(documentCid(doc)).toBe(await referenceCid(doc));
      }),
      { numRuns: 40 },
    );
  });

  it('spells prefixed-style names with TOOL_NAME_STYLE=prefixed', () => {
    const docs = buildToolDocuments('acme', [{ name: 'Search Docs' }, { name: 'créer' }], { style: PX });
    expect(docs.map((d) => d.name)).toEqual(['mcp_acme_Search_Docs', 'mcp_acme_cr_er']);
  });
});

describe('lambda documents', () => {
  it('normalises a lambda and refuses bad names and mcp kinds', () => {
    expect(
      buildLambdaDocument('my_tool', { description: ' Does it. ', inputSchema: { $schema: 'x', type: 'object' } }),
    ).toEqual({
      kind: 'lambda',
      name: 'my_tool',
      description: 'Does it.',
      inputSchema: { type: 'object' },
      enabled: true,
    });
    expect(buildLambdaDocument('x', { enabled: false }).enabled).toBe(false);
    for (const [name, doc] of [
      ['bad name', {}],
      ['x'.repeat(65), {}],
      ['ok', null],
      ['ok', { kind: 'mcp' }],
      ['ok', { description: 3 }],
    ] as const) {
      expect(() => buildLambdaDocument(name, doc)).toThrow(LambdaDocumentError);
    }
  });

  it('gives both provider formats for mcp documents and lambdas', () => {
    const [mcp] = buildToolDocuments('gh', [{ name: 'open', description: 'Open it.' }], { style: DU });
    const lambda = buildLambdaDocument('mine', {});
    const out = providerTools([mcp!, lambda]);
    expect(out.openai.map((t) => t.function.name)).toEqual(['gh__open', 'mine']);
    expect(out.anthropic[1]).toEqual({ name: 'mine', description: 'mine (lambda)', input_schema: { type: 'object' } });
  });
});
