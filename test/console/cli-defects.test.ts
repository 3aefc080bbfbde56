import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { askedInput, startInputSystem } from '../inputs/input-system.js';
import { everyBlockTools } from '../servers/content-tools.js';
import type { InputMcpServer } from '../servers/input-mcp-server.js';
import { startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { TINY_PNG_BASE64 } from '../servers/test-tools.js';
import { cliEnvFor, runCli } from '../support/cli.js';
import type { ProxySystem } from '../support/proxy-system.js';

/** What a file-reading tool puts in its structured content: 96 KiB of bytes as base64 (128 KiB). */
const FILE_BYTES = Buffer.alloc(96 * 1024, 0x5a).toString('base64');

/**
 * The CLI's defects of issue 24, against the real system (registry, projector, proxy on real
 * NATS, Postgres and Redis; real SDK servers on loopback): several `--accept` values are all sent,
 * and `mcpx call` prints the text, then a short line for structured content and images (`--json`
 * keeps the whole result).
 */
describe('mcpx: several --accept values, a call result in short', { timeout: 300_000 }, () => {
  let system: ProxySystem;
  let upstream: InputMcpServer;
  let files: TestMcpServer;
  let env: Record<string, string>;

  beforeAll(async () => {
    ({ system, upstream } = await startInputSystem());
    files = await startTestMcpServer({
      tools: [
        ...everyBlockTools(),
        {
          name: 'read_file',
          inputSchema: { type: 'object' },
          handler: () => ({
            content: [{ type: 'text', text: 'read /data/blob.bin (96 KiB)' }],
            structuredContent: { path: '/data/blob.bin', size: 98_304, data: FILE_BYTES },
          }),
        },
      ],
    });
    await system.setServer('files', files.url);
    await system.createAgent('reader', ['files'], 3);
    ({ env } = cliEnvFor(system.api));
  });

  afterAll(async () => {
    await system?.stop();
    await Promise.all([upstream?.close(), files?.close()]);
  });

  it('inputs answer ID --accept email=… seats=5 plan=team sends every value; a word that is no NAME=VALUE is refused', async () => {
    const asked = await askedInput(system.call('ops-agent', 'multi-1', 'ops__profile', {}));
    const id = asked.inputRequestId;
    const bad = await runCli(['inputs', 'answer', id, '--accept', 'email=alice@example.com', 'seats'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--accept takes NAME=VALUE words; seats is not one');

    const out = await runCli(
      ['inputs', 'answer', id, '--accept', 'email=alice@example.com', 'seats=5', 'plan=team'],
      env,
    );
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toContain(`answered ${id}`);
    const done = await system.call('ops-agent', 'multi-1', 'ops__profile', {}, { inputRequestId: id });
    const content = JSON.parse(done.result.text?.replace(/^profile /, '') ?? '{}') as Record<string, unknown>;
    expect(content).toEqual({ email: 'alice@example.com', seats: 5, plan: 'team' });
  });

  it('mcpx call prints the text, then one line for structured content and one for images, never their bytes; --json keeps everything', async () => {
    const read = await runCli(['call', '--agent', 'reader', 'files__read_file', '{}'], env);
    expect(read.code, read.stderr).toBe(0);
    const lines = read.stdout.trim().split('\n');
    expect(lines).toContain('read /data/blob.bin (96 KiB)');
    expect(lines).toContain(
      '[structured content (128.0 KB): path "/data/blob.bin", size 98304, data text (131072 chars)]',
    );
    expect(read.stdout).not.toContain(FILE_BYTES.slice(0, 64));
    expect(read.stdout.length).toBeLessThan(1024);

    const blocks = await runCli(['call', '--agent', 'reader', 'files__every_block', '{}'], env);
    expect(blocks.code, blocks.stderr).toBe(0);
    expect(blocks.stdout).toContain('Here is the chart:');
    expect(blocks.stdout).toMatch(/\[structured content \(\d+ B\): charts 1, files 3 items\]/);
    expect(blocks.stdout).toMatch(/\[1 image \(image\/png, \d+ B\)/);
    expect(blocks.stdout).not.toContain(TINY_PNG_BASE64);
    expect(blocks.stdout).toContain('--json shows the whole result');

    const json = await runCli(['call', '--agent', 'reader', 'files__read_file', '{}', '--json'], env);
    expect(json.code, json.stderr).toBe(0);
    expect((JSON.parse(json.stdout) as { result: { data: string } }).result.data).toBe(FILE_BYTES);
  });
});
