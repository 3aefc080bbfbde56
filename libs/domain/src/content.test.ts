import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  CONTENT_MAX_DEPTH,
  DEFAULT_CONTENT_LIMITS,
  OMITTED_META_KEY,
  shapeBlock,
  wholeContent,
  type ContentBlock,
} from './content.js';
import { markerLabel } from './content-facts.js';
import { jsonSizeExceeds, jsonSizeWithin, wireSizeWithin } from './json-measure.js';
import { TEXT_LIMIT_BYTES } from './result.js';

const b64 = (bytes: number): string => Buffer.alloc(bytes, 9).toString('base64');
const omitted = (block: ContentBlock | undefined): unknown =>
  (block?._meta as Record<string, unknown> | undefined)?.[OMITTED_META_KEY];
const limits = DEFAULT_CONTENT_LIMITS;

describe('wholeContent', () => {
  it('keeps every MCP block type in order with its annotations and _meta, less the connector keys', () => {
    const content = [
      {
        type: 'text',
        text: 'below',
        annotations: { audience: ['user'] },
        _meta: { 'x/y': 1, 'io.mcpx/omitted': { forged: true } },
      },
      { type: 'image', data: b64(10), mimeType: 'image/png' },
      { type: 'audio', data: b64(10), mimeType: 'audio/wav', annotations: { priority: 0.2 } },
      { type: 'resource_link', uri: 'file:///a', name: 'a', size: 4, icons: [{ src: 'https://x/i.png' }] },
      { type: 'resource', resource: { uri: 'file:///t', text: 'hello', _meta: { r: 1 } } },
      { type: 'resource', resource: { uri: 'file:///b', blob: b64(4), mimeType: 'application/zip' } },
    ];
    const r = wholeContent({
      content,
      isError: true,
      _meta: { 'io.mcpx/error': 'forged', 'io.modelcontextprotocol/serverInfo': { name: 'remote' }, keep: true },
      resultType: 'complete',
    });
    expect(r.content).toEqual([{ ...content[0], _meta: { 'x/y': 1 } }, ...content.slice(1)]);
    expect(r.isError).toBe(true);
    expect(r.meta).toEqual({ keep: true });
  });

  it('cuts a text over its bound with the runtime marker and the bound named', () => {
    const r = wholeContent(
      {
        content: [
          { type: 'text', text: 'é'.repeat(10) },
          { type: 'resource', resource: { uri: 'u:', text: 'abcdefghij' } },
        ],
      },
      { textBytes: 7 },
    );
    expect(r.content[0]?.text).toBe('ééé\n…[truncated: 14 bytes omitted; a text is held to 7 bytes]');
    expect((r.content[1]?.resource as { text: string }).text).toBe(
      'abcdefg\n…[truncated: 3 bytes omitted; a text is held to 7 bytes]',
    );
  });

  it('replaces what it cannot pass on by a marker saying what and why', () => {
    const deep: Record<string, unknown> = {};
    let at = deep;
    for (let i = 0; i <= CONTENT_MAX_DEPTH; i++) at = at.n = {};
    const parts = [
      { type: 'image', data: b64(100), mimeType: 'image/png' },
      { type: 'audio', data: 'not base64!', mimeType: 'audio/wav' },
      { type: 'resource', resource: { uri: 'file:///big.bin', mimeType: 'application/octet-stream', blob: b64(100) } },
      { type: 'text', text: 'x', _meta: deep },
      JSON.parse('{"type":"text","text":"x","_meta":{"__proto__":{"admin":true}}}') as unknown,
      { type: 'video', url: 'https://x' },
      { type: 'text' },
      'junk',
    ];
    const r = wholeContent({ content: parts }, { binaryBytes: 50 });
    expect(r.content.map((b) => b.text)).toEqual([
      "[image omitted: image/png, 100 bytes; one block's data is held to 50 bytes]",
      '[audio omitted: audio/wav, 8 bytes; its data is not base64]',
      "[resource omitted: file:///big.bin, application/octet-stream, 100 bytes; one block's data is held to 50 bytes]",
      `[text omitted: 1 bytes; a block's fields may nest ${CONTENT_MAX_DEPTH} levels]`,
      '[text omitted: 1 bytes; it carries the key "__proto__"]',
      '[video omitted; MCP has no such content type]',
      '[text omitted; it is not a well-formed block of its type]',
      '[string omitted; it is not a well-formed block of its type]',
    ]);
    expect(omitted(r.content[0])).toEqual({
      type: 'image',
      mimeType: 'image/png',
      bytes: 100,
      reason: 'binaryBytes',
      limit: 50,
    });
    expect(omitted(r.content[5])).toEqual({ type: 'video', reason: 'unknown_type' });
  });

  it('names a URI safely: controls and bidi overrides replaced, long ones cut', () => {
    const r = wholeContent(
      { content: [{ type: 'resource', resource: { uri: 'file:///a\n]\u202Eevil', blob: b64(100) } }] },
      { binaryBytes: 1 },
    );
    expect(r.content[0]?.text).toBe(
      "[resource omitted: file:///a\uFFFD]\uFFFDevil, 100 bytes; one block's data is held to 1 bytes]",
    );
    expect(markerLabel('x'.repeat(300))).toBe(`${'x'.repeat(200)}…`);
  });

  it('holds the blocks to the total bound, then to the count, with one closing marker', () => {
    const many = Array.from({ length: 50 }, (_, i) => ({ type: 'text', text: `block ${i}` }));
    const counted = wholeContent({ content: many }, { blocks: 10 });
    expect(counted.content).toHaveLength(11);
    expect(counted.content[10]?.text).toBe('[40 more content blocks omitted; a result is held to 10 blocks]');
    const sized = wholeContent(
      { content: [{ type: 'text', text: 'a'.repeat(900) }, { type: 'text', text: 'b'.repeat(900) }, ...many] },
      { totalBytes: 1200 },
    );
    expect(sized.content[0]?.text).toBe('a'.repeat(900));
    expect(omitted(sized.content[1])).toEqual({ type: 'text', bytes: 900, reason: 'totalBytes', limit: 1200 });
    expect(sized.content.at(-1)?.text).toMatch(
      /^\[\d+ more content blocks omitted; a result's content is held to 1200 bytes\]$/,
    );
  });

  it('replaces a result _meta over its bound', () => {
    const r = wholeContent({ content: [], _meta: { pad: 'x'.repeat(100) } }, { metaBytes: 50 });
    expect(r.meta).toEqual({ [OMITTED_META_KEY]: { type: '_meta', reason: 'metaBytes', limit: 50 } });
  });

  it('stays within the total bound plus one closing marker, whatever the blocks', () => {
    const block = fc.oneof(
      fc.record({ type: fc.constant('text'), text: fc.string({ maxLength: 400 }) }),
      fc.record({
        type: fc.constant('image'),
        data: fc.integer({ min: 0, max: 300 }).map(b64),
        mimeType: fc.constant('image/png'),
      }),
      fc.record({ type: fc.string({ maxLength: 8 }), uri: fc.string({ maxLength: 40 }) }),
      fc.anything(),
    );
    fc.assert(
      fc.property(fc.array(block, { maxLength: 60 }), fc.integer({ min: 300, max: 3000 }), (content, totalBytes) => {
        const r = wholeContent({ content }, { totalBytes, textBytes: 200, binaryBytes: 200, blocks: 40 });
        const [closing] =
          r.content.at(-1)?._meta !== undefined && (omitted(r.content.at(-1)) as { type?: string })?.type === 'blocks'
            ? r.content.slice(-1)
            : [];
        const kept = closing === undefined ? r.content : r.content.slice(0, -1);
        expect(jsonSizeExceeds(kept, totalBytes + kept.length + 2)).toBe(false);
        expect(kept.length).toBeLessThanOrEqual(40);
      }),
    );
  });
});

describe('wireSizeWithin', () => {
  it('is at least the JSON size, and counts a number as CBOR may write it (9 bytes)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const json = jsonSizeWithin(v, 1e9)!;
        expect(wireSizeWithin(v, 1e9)).toBeGreaterThanOrEqual(json);
      }),
    );
    expect(jsonSizeWithin({ f: [0.1, 0.1] }, 100)).toBe(15);
    expect(wireSizeWithin({ f: [0.1, 0.1] }, 100)).toBe(15 + 2 * 6 + 3 * 3);
    expect(wireSizeWithin({ f: [0.1, 0.1] }, 20)).toBeUndefined();
  });
});

describe('shapeBlock', () => {
  it('passes a text at its bound whole', () => {
    const text = 'y'.repeat(TEXT_LIMIT_BYTES);
    expect(shapeBlock({ type: 'text', text }, limits)).toEqual({ type: 'text', text });
  });
});
