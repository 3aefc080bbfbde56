import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  ARGUMENT_MAX_CHARS,
  IMAGE_MAX_BYTES,
  TEXT_LIMIT_BYTES,
  base64DecodedLength,
  flattenCallResult,
  isBase64,
  isErrorResult,
} from './result.js';
import type { CallResultLike, FlattenCallInput } from './result.js';
import { utf8ByteLength } from './utf8.js';

const call = (result: CallResultLike, args: Record<string, unknown> = {}): FlattenCallInput => ({
  tool: 'github__create_issue',
  server: 'github',
  remoteName: 'create_issue',
  arguments: args,
  result,
  durationMs: 12,
});
const png = (bytes: number) => Buffer.alloc(bytes, 7).toString('base64');

describe('flattenCallResult', () => {
  it('names the call by its first short string argument', () => {
    const r = flattenCallResult(
      call({ content: [{ type: 'text', text: 'Created #4' }] }, { n: 3, title: 'Fix login', body: 'x' }),
    );
    expect(r).toEqual({
      summary: 'github__create_issue · Fix login',
      argument: 'Fix login',
      text: 'Created #4',
      durationMs: 12,
    });
  });

  it('falls back to the server sentence without a usable argument', () => {
    const sentence = 'Ran github__create_issue on the github MCP server';
    for (const args of [
      {},
      { n: 1 },
      { t: 'x'.repeat(ARGUMENT_MAX_CHARS + 1), u: 'short' },
      { t: 'a\nb' },
      { t: '  ' },
    ]) {
      const r = flattenCallResult(call({}, args));
      expect(r.summary).toBe(sentence);
      expect(r).not.toHaveProperty('argument');
    }
    expect(flattenCallResult(call({}, { t: '😀'.repeat(ARGUMENT_MAX_CHARS) })).argument).toBe(
      '😀'.repeat(ARGUMENT_MAX_CHARS),
    );
  });

  it('joins text and embedded resource text, names what text cannot carry, and passes structured content through', () => {
    const structured = { id: 4, tags: ['a'] };
    const r = flattenCallResult(
      call({
        content: [
          { type: 'text', text: 'one' },
          { type: 'resource', resource: { uri: 'file:///a.txt', text: 'two' } },
          { type: 'resource_link', uri: 'https://x/y', name: 'y' },
          { type: 'resource_link', uri: 'file:///r.pdf', name: 'r', mimeType: 'application/pdf', size: 5000 },
          { type: 'resource', resource: { uri: 'file:///b.bin', blob: 'AAAA' } },
          {
            type: 'resource',
            resource: { uri: 'file:///c.bin', mimeType: 'application/zip', blob: Buffer.alloc(300).toString('base64') },
          },
          { type: 'audio', data: 'AAAA', mimeType: 'audio/wav' },
          { type: 'text', text: '' },
          { type: 'mystery' },
          'junk',
          null,
          { type: 'text', text: 'three' },
        ],
        structuredContent: structured,
      }),
    );
    expect(r.text?.split('\n')).toEqual([
      'one',
      'two',
      '[resource link: https://x/y]',
      '[resource link: file:///r.pdf, application/pdf, 5000 bytes]',
      '[resource omitted: file:///b.bin, 3 bytes]',
      '[resource omitted: file:///c.bin, application/zip, 300 bytes]',
      '[audio omitted: audio/wav, 3 bytes]',
      '[mystery omitted]',
      '[string omitted]',
      '[null omitted]',
      'three',
    ]);
    expect(r.result).toBe(structured);
  });

  it('omits empty text, result and images', () => {
    const r = flattenCallResult(call({ content: [] }));
    expect(Object.keys(r).sort()).toEqual(['durationMs', 'summary']);
  });

  it('bounds text at 256 KiB on a character boundary with a visible marker', () => {
    const text = 'é'.repeat(TEXT_LIMIT_BYTES);
    const r = flattenCallResult(
      call({
        content: [
          { type: 'text', text },
          { type: 'text', text: 'tail' },
        ],
      }),
    );
    const [kept, marker] = r.text!.split('\n…');
    expect(utf8ByteLength(kept!)).toBe(TEXT_LIMIT_BYTES);
    expect(kept).toBe('é'.repeat(TEXT_LIMIT_BYTES / 2));
    const omitted = TEXT_LIMIT_BYTES * 2 - TEXT_LIMIT_BYTES + 5;
    expect(marker).toBe(`[truncated: ${omitted} bytes omitted]`);
  });

  it('keeps text whole when it fits, and always stays within the limit plus the marker', () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ unit: 'grapheme', maxLength: 30 }), { maxLength: 10 }),
        fc.integer({ min: 1, max: 200 }),
        (parts, limit) => {
          const content = parts.map((text) => ({ type: 'text', text }));
          const r = flattenCallResult(call({ content }), { textBytes: limit });
          const full = parts.filter((p) => p !== '').join('\n');
          if (utf8ByteLength(full) <= limit) expect(r.text ?? '').toBe(full);
          else {
            const [kept, marker] = r.text!.split('\n…[truncated: ');
            expect(full.startsWith(kept!)).toBe(true);
            expect(utf8ByteLength(kept!)).toBeLessThanOrEqual(limit);
            expect(marker).toBe(`${utf8ByteLength(full) - utf8ByteLength(kept!)} bytes omitted]`);
          }
        },
      ),
    );
  });

  it('passes images on within bounds and replaces the rest with marker lines', () => {
    const small = png(1000);
    const content = [
      { type: 'image', data: small, mimeType: 'image/png' },
      { type: 'image', data: png(IMAGE_MAX_BYTES + 10), mimeType: 'image/png' },
      { type: 'image', data: 'not base64!', mimeType: 'image/png' },
      { type: 'image', data: small, mimeType: 'text/html' },
      { type: 'audio', data: small, mimeType: 'audio/wav' },
    ];
    const r = flattenCallResult(call({ content }));
    expect(r.images).toEqual([{ data: small, mimeType: 'image/png' }]);
    expect(r.text).toBe(
      '[image omitted: image/png, 10 bytes over the limit]\n[image omitted: image/png, not a base64 image]\n' +
        '[image omitted: text/html, not a base64 image]\n[audio omitted: audio/wav, 1000 bytes]',
    );
  });

  it('caps the number and total size of images', () => {
    const many = Array.from({ length: 18 }, () => ({ type: 'image', data: png(3), mimeType: 'image/gif' }));
    const r = flattenCallResult(call({ content: many }));
    expect(r.images).toHaveLength(16);
    expect(r.text).toBe(
      '[image omitted: image/gif, more than 16 images]\n[image omitted: image/gif, more than 16 images]',
    );

    const four = Array.from({ length: 5 }, () => ({
      type: 'image',
      data: png(3 * 1024 * 1024),
      mimeType: 'image/png',
    }));
    const t = flattenCallResult(call({ content: four }), { imagesTotalBytes: 10 * 1024 * 1024 });
    expect(t.images).toHaveLength(3);
    expect(t.text?.split('\n')).toEqual([
      `[image omitted: image/png, ${2 * 1024 * 1024} bytes over the limit]`,
      `[image omitted: image/png, ${2 * 1024 * 1024} bytes over the limit]`,
    ]);
  });
});

describe('base64 helpers', () => {
  it('computes the decoded size from the length and recognises base64', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 100 }), (bytes) => {
        const b64 = Buffer.from(bytes).toString('base64');
        expect(base64DecodedLength(b64)).toBe(bytes.length);
        expect(isBase64(b64)).toBe(true);
        expect(isBase64(b64.replace(/=+$/, ''))).toBe(true);
      }),
    );
    for (const bad of ['a', 'ab=c', 'abc==', 'a b c d', 'abcd\n', '====']) expect(isBase64(bad)).toBe(false);
  });
});

describe('isErrorResult', () => {
  it('is undefined for a result that is not an error', () => {
    expect(isErrorResult({ content: [{ type: 'text', text: 'ok' }] })).toBeUndefined();
    expect(isErrorResult({ isError: false })).toBeUndefined();
  });

  it('gives the error text, bounded to 4 KiB', () => {
    expect(isErrorResult({ isError: true, content: [{ type: 'text', text: ' Not found ' }] })).toBe('Not found');
    const long = isErrorResult({ isError: true, content: [{ type: 'text', text: 'x'.repeat(10_000) }] })!;
    expect(utf8ByteLength(long)).toBeLessThanOrEqual(4096);
    expect(long.endsWith('…')).toBe(true);
  });

  it('falls back to structured content, then to a sentence', () => {
    expect(isErrorResult({ isError: true, structuredContent: { code: 42 } })).toBe('{"code":42}');
    expect(isErrorResult({ isError: true })).toBe('the MCP server reported an error without a message');
  });
});
