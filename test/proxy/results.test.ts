import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEXT_LIMIT_BYTES } from '@mcpx/domain';
import {
  TINY_PNG_BASE64,
  bigTextTool,
  defaultTools,
  errorTool,
  imageTool,
  startEverythingServer,
  startTestMcpServer,
  structuredTool,
  type EverythingServer,
  type TestMcpServer,
  type TestTool,
} from '../servers/index.js';
import { ProxySystem } from '../support/proxy-system.js';

/** Embedded resource text, as a tool returns a file it read. */
const resourceTool: TestTool = {
  name: 'read_file',
  inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  handler: (args) => ({
    content: [
      { type: 'text', text: 'contents follow' },
      {
        type: 'resource',
        resource: { uri: `file:///${String(args.path)}`, mimeType: 'text/plain', text: 'line one\nline two' },
      },
      { type: 'resource_link', uri: 'file:///elsewhere', name: 'elsewhere' },
      { type: 'resource_link', uri: 'file:///report.pdf', name: 'report', mimeType: 'application/pdf', size: 48_213 },
      {
        type: 'resource',
        resource: {
          uri: 'file:///data.bin',
          mimeType: 'application/octet-stream',
          blob: Buffer.alloc(600, 1).toString('base64'),
        },
      },
      { type: 'audio', data: Buffer.alloc(1200, 2).toString('base64'), mimeType: 'audio/wav' },
    ],
  }),
};

/** An image far over the proxy's bound (NATS' 1 MiB payload leaves ~350 KiB for images). */
const hugeImageTool: TestTool = {
  name: 'huge_image',
  inputSchema: { type: 'object' },
  handler: () => ({
    content: [
      { type: 'image', data: Buffer.alloc(2 * 1024 * 1024, 1).toString('base64'), mimeType: 'image/png' },
      { type: 'image', data: TINY_PNG_BASE64, mimeType: 'image/png' },
    ],
  }),
};

/** The demo server's tools: text, numbers, an image, an error, structured content, big text, resources, a huge image. */
const demoTools = (): TestTool[] => [
  ...defaultTools(),
  imageTool(),
  errorTool('the disk is full'),
  structuredTool(),
  structuredTool(
    JSON.parse('{"count":1,"nested":{"__proto__":{"admin":true}}}') as Record<string, unknown>,
    'proto_result',
  ),
  bigTextTool(1024 * 1024, 'big'),
  resourceTool,
  hugeImageTool,
];

describe.each(['modern', 'legacy'] as const)(
  'proxy results against a %s test server (and, legacy, server-everything): flattened exactly per docs/call.md#results, through NATS, against real servers',
  (era) => {
    let system: ProxySystem;
    let upstream: TestMcpServer;
    /** server-everything speaks the legacy era only: it runs once, in the legacy block. */
    let everything: EverythingServer | undefined;

    beforeAll(async () => {
      [system, upstream, everything] = await Promise.all([
        ProxySystem.start(),
        startTestMcpServer({ era, tools: demoTools() }),
        era === 'legacy' ? startEverythingServer('streamableHttp') : undefined,
      ]);
      await system.setServer('demo', upstream.url);
      if (everything) await system.setServer('everything', everything.url);
      await system.createAgent(
        'agent',
        everything ? ['demo', 'everything'] : ['demo'],
        everything ? 10 : demoTools().length,
      );
    });

    afterAll(async () => {
      await system?.stop();
      await upstream?.close();
      await everything?.close();
    });

    it('text with argument and summary; no argument → "Ran … on the … MCP server"', async () => {
      const { result, instance } = await system.call('agent', 'r1', 'demo__echo', { text: 'hello' });
      expect(result).toMatchObject({ summary: 'demo__echo · hello', argument: 'hello', text: 'echo: hello' });
      expect(result.durationMs).toBeGreaterThanOrEqual(0);
      expect(instance).toBe(system.proxies[0]!.instance);
      const sum = await system.call('agent', 'r1', 'demo__add', { a: 2, b: 3 });
      expect(sum.result).toEqual({
        summary: 'Ran demo__add on the demo MCP server',
        text: '5',
        result: { sum: 5 },
        durationMs: sum.result.durationMs,
      });
      // An argument longer than 80 characters does not name the call.
      const long = await system.call('agent', 'r1', 'demo__echo', { text: 'x'.repeat(81) });
      expect(long.result.argument).toBeUndefined();
      expect(long.result.summary).toBe('Ran demo__echo on the demo MCP server');
    });

    it('passes structuredContent through even when it disagrees with the outputSchema', async () => {
      const { result } = await system.call('agent', 'r1', 'demo__structured');
      expect(result.result).toEqual({ count: 'three' });
    });

    it('a structured result carrying the key "__proto__" is left out with a marker; the call ran and its text goes', async () => {
      const { result } = await system.call('agent', 'r1', 'demo__proto_result');
      expect(result.result).toBeUndefined();
      expect(result.text).toBe(
        '{"count":1,"nested":{"__proto__":{"admin":true}}}\n[structured result omitted: it carries the key "__proto__"]',
      );
    });

    it('passes images on, and replaces one over the bound with a marker', async () => {
      const img = await system.call('agent', 'r1', 'demo__image');
      expect(img.result.images).toEqual([{ data: TINY_PNG_BASE64, mimeType: 'image/png' }]);
      expect(img.result.text).toBe('a tiny image');
      const huge = await system.call('agent', 'r1', 'demo__huge_image');
      expect(huge.result.images).toEqual([{ data: TINY_PNG_BASE64, mimeType: 'image/png' }]);
      expect(huge.result.text).toMatch(/^\[image omitted: image\/png, \d+ bytes over the limit\]$/);
    });

    it('includes embedded resource text, and names linked resources, binary resources and audio (URI, type, size) rather than dropping them', async () => {
      const { result } = await system.call('agent', 'r1', 'demo__read_file', { path: 'notes.txt' });
      expect(result.text?.split('\n')).toEqual([
        'contents follow',
        'line one',
        'line two',
        '[resource link: file:///elsewhere]',
        '[resource link: file:///report.pdf, application/pdf, 48213 bytes]',
        '[resource omitted: file:///data.bin, application/octet-stream, 600 bytes]',
        '[audio omitted: audio/wav, 1200 bytes]',
      ]);
      expect(result.images).toBeUndefined();
      expect(result.content).toBeUndefined();
      expect(result.summary).toBe('demo__read_file · notes.txt');
    });

    it('bounds a 1 MiB text result at 256 KiB with a visible marker', async () => {
      const { result } = await system.call('agent', 'r1', 'demo__big');
      const omitted = 1024 * 1024 - TEXT_LIMIT_BYTES;
      expect(result.text).toBe(`${'x'.repeat(TEXT_LIMIT_BYTES)}\n…[truncated: ${omitted} bytes omitted]`);
    });

    it('turns an isError result into a typed server_error carrying the server text', async () => {
      const err = await system.callError('agent', 'r1', 'demo__fail');
      expect(err.code).toBe('server_error');
      expect(err.message).toBe('the disk is full');
    });

    it('asked for the whole content (content: true), answers the blocks in order, a server error as a result, and markers past the bounds', async () => {
      const { result } = await system.call('agent', 'r1', 'demo__read_file', { path: 'notes.txt' }, { content: true });
      expect(result.summary).toBe('demo__read_file · notes.txt');
      expect(result.text).toBeUndefined();
      expect(result.content?.map((b) => b.type)).toEqual([
        'text',
        'resource',
        'resource_link',
        'resource_link',
        'resource',
        'audio',
      ]);
      expect(result.content?.[3]).toEqual({
        type: 'resource_link',
        uri: 'file:///report.pdf',
        name: 'report',
        mimeType: 'application/pdf',
        size: 48_213,
      });
      const failed = await system.call('agent', 'r1', 'demo__fail', {}, { content: true });
      expect(failed.result).toMatchObject({ isError: true, content: [{ type: 'text', text: 'the disk is full' }] });
      // Within NATS' 1 MiB: the 2 MiB image is a marker in its place, the tiny one follows.
      const huge = await system.call('agent', 'r1', 'demo__huge_image', {}, { content: true });
      expect(huge.result.content?.[0]).toMatchObject({
        type: 'text',
        _meta: {
          'io.mcpx/omitted': { type: 'image', mimeType: 'image/png', bytes: 2 * 1024 * 1024, reason: 'binaryBytes' },
        },
      });
      expect(huge.result.content?.[1]).toEqual({ type: 'image', data: TINY_PNG_BASE64, mimeType: 'image/png' });
      const big = await system.call('agent', 'r1', 'demo__big', {}, { content: true });
      expect(big.result.content?.[0]?.text).toBe(
        `${'x'.repeat(TEXT_LIMIT_BYTES)}\n…[truncated: ${1024 * 1024 - TEXT_LIMIT_BYTES} bytes omitted; a text is held to ${TEXT_LIMIT_BYTES} bytes]`,
      );
      const proto = await system.call('agent', 'r1', 'demo__proto_result', {}, { content: true });
      expect(proto.result.result).toBeUndefined();
      expect(proto.result.content?.at(-1)).toEqual({
        type: 'text',
        text: '[structured result omitted: it carries the key "__proto__"]',
        _meta: { 'io.mcpx/omitted': { type: 'structuredContent', reason: 'proto_key' } },
      });
    });

    it('answers a contract miss with the contract (touch-expand) and calls nothing', async () => {
      const before = upstream.stats.calls;
      const err = await system.callError('agent', 'r1', 'demo__add', { a: 'two' });
      expect(err.code).toBe('invalid_arguments');
      expect(err.details.contract).toMatchObject({
        name: 'demo__add',
        inputSchema: { properties: { a: { type: 'number' } } },
      });
      expect(err.details.errors).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ path: '/a', keyword: 'type' }),
          expect.objectContaining({ path: '/b', keyword: 'required' }),
        ]),
      );
      expect(upstream.stats.calls).toBe(before);
      const missing = await system.callError('agent', 'r1', 'demo__nope');
      expect(missing.code).toBe('not_found');
    });

    it.runIf(era === 'legacy')(
      'server-everything: text, tiny image, structured content and an embedded resource',
      async () => {
        const echo = await system.call('agent', 'r2', 'everything__echo', { message: 'hi there' });
        expect(echo.result).toMatchObject({
          summary: 'everything__echo · hi there',
          argument: 'hi there',
          text: 'Echo: hi there',
        });

        const image = await system.call('agent', 'r2', 'everything__get-tiny-image');
        expect(image.result.images).toHaveLength(1);
        expect(image.result.images?.[0]?.mimeType).toBe('image/png');
        expect(image.result.images?.[0]?.data.length).toBeGreaterThan(100);

        const weather = await system.call('agent', 'r2', 'everything__get-structured-content', {
          location: 'New York',
        });
        expect(weather.result.result).toEqual({ temperature: 33, conditions: 'Cloudy', humidity: 82 });
        expect(weather.result.argument).toBe('New York');

        const ref = await system.call('agent', 'r2', 'everything__get-resource-reference', {
          resourceType: 'Text',
          resourceId: 2,
        });
        expect(ref.result.text).toContain('Returning resource reference for Resource 2:');
        expect(ref.result.text).toMatch(/Resource 2: This is a plaintext resource/);

        const bad = await system.callError('agent', 'r2', 'everything__get-sum', { a: 'x', b: 1 });
        expect(bad.code).toBe('invalid_arguments');
        expect(bad.details.contract).toMatchObject({ name: 'everything__get-sum' });
      },
    );
  },
);
