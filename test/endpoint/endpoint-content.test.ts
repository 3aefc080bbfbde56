import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { RunningEndpoint } from '@mcpx/endpoint';
import { setupTelemetry, type Telemetry } from '@mcpx/telemetry';
import { startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { everyBlockTools, hostileContentTools } from '../servers/content-tools.js';
import { lessConnectorKeys, type Result } from './client-results.js';
import { startEndpointSystem, type EndpointSystem } from './endpoint-harness.js';
import { startSdkOnlyEndpoint } from '../support/fixtures/sdk-only-endpoint.js';

type Caller = (
  url: string,
  headers: Record<string, string>,
  tool: string,
  args?: Record<string, unknown>,
) => Promise<Result>;

/** The SDK v2 client (2026-07-28 against a server that speaks it) and the SDK v1 client (2025-11-25). */
const callers: Record<'v2 (2026-07-28)' | 'v1 (2025-11-25)', Caller> = {
  'v2 (2026-07-28)': async (url, headers, tool, args = {}) => {
    const client = new Client({ name: 'content-v2', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
    try {
      return await client.callTool({ name: tool, arguments: args });
    } finally {
      await client.close();
    }
  },
  'v1 (2025-11-25)': async (url, headers, tool, args = {}) => {
    const client = new V1Client({ name: 'content-v1', version: '1.0.0' });
    await client.connect(new V1Transport(new URL(url), { requestInit: { headers } }));
    try {
      return await client.callTool({ name: tool, arguments: args });
    } finally {
      await client.close();
    }
  },
};

const omitted = (block: Record<string, unknown> | undefined): Record<string, unknown> | undefined =>
  (block?._meta as Record<string, Record<string, unknown>> | undefined)?.['io.mcpx/omitted'];

/**
 * Content whole through the agent endpoint: every block type in the server's order with its
 * annotations and `_meta`, `structuredContent`, `isError` and the result's `_meta` reach an SDK v2
 * and an SDK v1 client as the same clients get them straight from the server (less the
 * connector's own `_meta` keys), on the lean path and on the SDK's; a hostile server's huge blob,
 * 100,000 blocks and fat `_meta` get bounded results with markers that say what and why.
 */
describe('the agent MCP endpoint: content whole, as the server sent it', () => {
  let sys: EndpointSystem;
  let sdkOnly: RunningEndpoint;
  let upstream: TestMcpServer;
  let token = '';
  const exporter = new InMemorySpanExporter();
  let telemetry: Telemetry;

  beforeAll(async () => {
    telemetry = await setupTelemetry({ serviceName: 'endpoint-content-test', spanExporter: exporter });
    [sys, upstream] = await Promise.all([
      startEndpointSystem({ telemetry, endpointEnv: { ENDPOINT_LEAN_CALLS: 'on' } }),
      startTestMcpServer({ era: 'dual', tools: [...everyBlockTools(), ...hostileContentTools()] }),
    ]);
    sdkOnly = await startSdkOnlyEndpoint(sys.system, telemetry, 'endpoint-content-sdk');
    await sys.system.setServer('docs', upstream.url);
    await sys.system.createAgent('reader', ['docs'], 5);
    ({ token } = await sys.token('reader'));
  }, 120_000);

  afterAll(async () => {
    await sdkOnly?.stop();
    await sys?.stop();
    await upstream?.close();
    await telemetry?.shutdown();
  });

  const auth = (): Record<string, string> => ({ authorization: `Bearer ${token}` });
  const paths = (): Array<[string, string]> => [
    ['lean path', sys.urlOf('reader')],
    ['SDK path', `${sdkOnly.url}/v1/agents/reader/mcp`],
  ];

  for (const [era, call] of Object.entries(callers)) {
    it(`gives the ${era} client every block, its annotations and _meta, structuredContent and the result's _meta as the server sent them`, async () => {
      const direct = await call(upstream.url, {}, 'every_block');
      // The direct result has what the test compares: the forged keys, the order, the types.
      expect(direct.content?.map((b) => b.type)).toEqual([
        'text',
        'image',
        'text',
        'audio',
        'resource_link',
        'resource',
        'resource',
        'text',
      ]);
      expect((direct.content?.[2]?._meta as Record<string, unknown>)['io.mcpx/omitted']).toEqual({ forged: true });
      for (const [path, url] of paths()) {
        const through = await call(url, auth(), 'docs__every_block');
        expect(lessConnectorKeys(through), path).toEqual(lessConnectorKeys(direct));
        // The server's forged connector keys are dropped, not passed on.
        expect(omitted(through.content?.[2]), path).toBeUndefined();
        expect(through._meta?.['io.mcpx/error'], path).toBeUndefined();
        // On 2026-07-28 the endpoint names itself, not the server behind it.
        if (era.startsWith('v2'))
          expect(through._meta?.['io.modelcontextprotocol/serverInfo'], path).toEqual({
            name: 'mcpx-agent',
            version: expect.any(String),
          });
      }
    });

    it(`gives the ${era} client a server's isError result whole, with the connector's server_error beside it`, async () => {
      const direct = await call(upstream.url, {}, 'every_block_error');
      expect(direct.isError).toBe(true);
      for (const [path, url] of paths()) {
        const through = await call(url, auth(), 'docs__every_block_error');
        expect(lessConnectorKeys(through), path).toEqual(lessConnectorKeys(direct));
        const error = through._meta?.['io.mcpx/error'] as { code: string; message: string };
        expect(error.code, path).toBe('server_error');
        expect(error.message, path).toContain('The image above is a one-pixel chart.');
      }
      // Counted as the server error it is, by the endpoint (its span's outcome) and by the proxy (its results by code).
      const outcomes = exporter
        .getFinishedSpans()
        .filter((x) => x.name === 'endpoint.tools/call' && x.attributes['mcpx.tool'] === 'docs__every_block_error')
        .map((x) => x.attributes['mcpx.outcome']);
      expect(outcomes.length).toBeGreaterThanOrEqual(2);
      expect(new Set(outcomes)).toEqual(new Set(['server_error']));
      expect(sys.system.proxies[0]!.stats().results.server_error).toBeGreaterThanOrEqual(2);
    });
  }

  it('replaces a blob over the per-block bound by a marker in its place, naming URI, type, size and the bound', async () => {
    for (const [path, url] of paths()) {
      const r = await callers['v2 (2026-07-28)'](url, auth(), 'docs__blob', { mib: 2 });
      expect(r.isError, path).toBeUndefined();
      expect(
        r.content?.map((b) => b.text),
        path,
      ).toEqual([
        'before',
        expect.stringMatching(
          /^\[resource omitted: file:\/\/\/huge\.bin, application\/octet-stream, 2097152 bytes; one block's data is held to \d+ bytes\]$/,
        ),
        'after',
      ]);
      expect(omitted(r.content?.[1]), path).toEqual({
        type: 'resource',
        uri: 'file:///huge.bin',
        mimeType: 'application/octet-stream',
        bytes: 2 * 1024 * 1024,
        reason: 'binaryBytes',
        limit: expect.any(Number),
      });
    }
  });

  it('answers a 50 MiB embedded blob with a typed refusal naming the bound, and goes on serving', async () => {
    const r = await callers['v1 (2025-11-25)'](sys.urlOf('reader'), auth(), 'docs__blob', { mib: 50 });
    expect(r.isError).toBe(true);
    const error = r._meta?.['io.mcpx/error'] as { code: string; message: string };
    // The proxy reads at most 8 MiB of one answer: the call ran, its answer is refused by name.
    expect(error.code).toBe('maybe_executed');
    expect(error.message).toContain('bound maxBodyBytes = 8388608 bytes');
    expect(error.message).not.toContain('AAAA');
    expect(JSON.stringify(r).length).toBeLessThan(16 * 1024);
    const after = await callers['v1 (2025-11-25)'](sys.urlOf('reader'), auth(), 'docs__blob', { mib: 0 });
    expect(after.content?.map((b) => b.type)).toEqual(['text', 'resource', 'text']);
  });

  it('keeps 1000 of 100,000 blocks and counts the rest in one closing marker', async () => {
    for (const [path, url] of paths()) {
      const r = await callers['v2 (2026-07-28)'](url, auth(), 'docs__many', { count: 100_000 });
      expect(r.content, path).toHaveLength(1001);
      expect(r.content?.[999], path).toEqual({ type: 'text', text: 'block 999' });
      expect(r.content?.[1000]?.text, path).toBe(
        '[99000 more content blocks omitted; a result is held to 1000 blocks]',
      );
      expect(omitted(r.content?.[1000]), path).toEqual({
        type: 'blocks',
        count: 99_000,
        reason: 'blocks',
        limit: 1000,
      });
    }
  });

  it('holds blocks whose CBOR outgrows their JSON to what the reply can carry', async () => {
    const r = await callers['v2 (2026-07-28)'](sys.urlOf('reader'), auth(), 'docs__float_meta');
    expect(r.isError).toBeUndefined();
    const kept = r.content!.filter((b) => omitted(b) === undefined);
    expect(kept.length).toBeGreaterThan(100);
    expect(kept.length).toBeLessThan(1000);
    expect(kept[0]).toEqual({ type: 'text', text: 'b0', _meta: { f: Array.from({ length: 160 }, () => 0.1) } });
    expect(omitted(r.content!.at(-1))).toMatchObject({ reason: 'totalBytes' });
  });

  it('replaces a block whose other fields are over their bound, and keeps the next', async () => {
    const r = await callers['v1 (2025-11-25)'](sys.urlOf('reader'), auth(), 'docs__fat_meta');
    expect(r.content?.[0]?.text).toBe("[text omitted: 3 bytes; a block's other fields are held to 65536 bytes]");
    expect(omitted(r.content?.[0])).toEqual({ type: 'text', bytes: 3, reason: 'metaBytes', limit: 65_536 });
    expect(r.content?.[1]).toEqual({ type: 'text', text: 'thin' });
  });
});
