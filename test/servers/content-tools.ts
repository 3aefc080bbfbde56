import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { TINY_PNG_BASE64, type TestTool } from './test-tools.js';

/** A short WAV header's worth of bytes: audio data as base64. */
export const TINY_WAV_BASE64 = Buffer.from('RIFF\u0024\u0000\u0000\u0000WAVEfmt ', 'latin1').toString('base64');

/**
 * Every content block type MCP defines, in an order a flattening would break (text about the
 * image after it), each with annotations and `_meta` (one carrying a forged connector key, which
 * the connector drops), the structured result and the result's `_meta`.
 */
export function everyBlockResult(isError = false): CallToolResult {
  const content = [
    {
      type: 'text',
      text: 'Here is the chart:',
      annotations: { audience: ['user'], priority: 0.9 },
      _meta: { 'example.com/step': 1 },
    },
    {
      type: 'image',
      data: TINY_PNG_BASE64,
      mimeType: 'image/png',
      annotations: { audience: ['user', 'assistant'], lastModified: '2026-01-02T03:04:05Z' },
    },
    {
      type: 'text',
      text: 'The image above is a one-pixel chart.',
      _meta: { 'io.mcpx/omitted': { forged: true }, 'example.com/step': 2 },
    },
    {
      type: 'audio',
      data: TINY_WAV_BASE64,
      mimeType: 'audio/wav',
      annotations: { priority: 0.1 },
      _meta: { 'example.com/seconds': 0 },
    },
    {
      type: 'resource_link',
      uri: 'file:///reports/q3.pdf',
      name: 'q3.pdf',
      title: 'Q3 report',
      description: 'The quarter in numbers',
      mimeType: 'application/pdf',
      size: 48_213,
      annotations: { audience: ['assistant'] },
      _meta: { 'example.com/etag': 'abc' },
    },
    {
      type: 'resource',
      resource: {
        uri: 'file:///notes.md',
        mimeType: 'text/markdown',
        text: '# Notes\n\nline two',
        _meta: { 'example.com/rev': 3 },
      },
      annotations: { priority: 0.5 },
    },
    {
      type: 'resource',
      resource: {
        uri: 'file:///data.bin',
        mimeType: 'application/octet-stream',
        blob: Buffer.from([0, 1, 2, 3, 254, 255]).toString('base64'),
      },
      _meta: { 'example.com/kind': 'raw' },
    },
    { type: 'text', text: 'That is all.' },
  ];
  return {
    content,
    structuredContent: { charts: 1, files: ['q3.pdf', 'notes.md', 'data.bin'] },
    ...(isError ? { isError: true } : {}),
    _meta: { 'example.com/request': 'r-1', 'io.mcpx/error': { forged: true } },
  } as CallToolResult;
}

/** `every_block` answers {@link everyBlockResult}; `every_block_error` the same with `isError: true`. */
export function everyBlockTools(): TestTool[] {
  return [
    {
      name: 'every_block',
      description: 'Every content block type.',
      inputSchema: { type: 'object' },
      handler: () => everyBlockResult(),
    },
    {
      name: 'every_block_error',
      description: 'Every content block type, as an error.',
      inputSchema: { type: 'object' },
      handler: () => everyBlockResult(true),
    },
  ];
}

/**
 * A hostile server's results: `blob {mib}` one embedded blob of that many MiB (between two texts),
 * `many {count}` that many text blocks, `float_meta` blocks whose `_meta` CBOR writes at twice
 * its JSON's size, `fat_meta` a block whose `_meta` is 100 KiB.
 */
export function hostileContentTools(): TestTool[] {
  return [
    {
      name: 'blob',
      inputSchema: { type: 'object', properties: { mib: { type: 'number' } }, required: ['mib'] },
      handler: (args) => ({
        content: [
          { type: 'text', text: 'before' },
          {
            type: 'resource',
            resource: {
              uri: 'file:///huge.bin',
              mimeType: 'application/octet-stream',
              blob: Buffer.alloc(Number(args.mib) * 1024 * 1024, 7).toString('base64'),
            },
          },
          { type: 'text', text: 'after' },
        ],
      }),
    },
    {
      name: 'many',
      inputSchema: { type: 'object', properties: { count: { type: 'number' } }, required: ['count'] },
      handler: (args) => ({
        content: Array.from({ length: Number(args.count) }, (_, i) => ({ type: 'text' as const, text: `block ${i}` })),
      }),
    },
    {
      // 1000 blocks of 640 bytes of JSON each (160 floats): within the reply as JSON, 2.25 times that as CBOR.
      name: 'float_meta',
      inputSchema: { type: 'object' },
      handler: () => ({
        content: Array.from({ length: 1000 }, (_, i) => ({
          type: 'text' as const,
          text: `b${i}`,
          _meta: { f: Array.from({ length: 160 }, () => 0.1) },
        })),
      }),
    },
    {
      name: 'fat_meta',
      inputSchema: { type: 'object' },
      handler: () => ({
        content: [
          { type: 'text', text: 'fat', _meta: { 'example.com/pad': 'x'.repeat(100 * 1024) } },
          { type: 'text', text: 'thin' },
        ],
      }),
    },
  ];
}
