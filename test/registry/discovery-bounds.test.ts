import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodePayload, encodePayload, type RedactedMcpServer } from '@mcpx/contracts';
import { createDb } from '@mcpx/db';
import { deepSchema, echoTool, startTestMcpServer, type TestMcpServer, type TestTool } from '../servers/index.js';
import { cliEnvFor, runCli } from '../support/cli.js';
import { RegistryHarness } from '../support/registry-harness.js';

/** The byte budget of one discovery (registry DISCOVERY_LIMITS.maxTotalBytes). */
const BUDGET = 32 * 1024 * 1024;
/** One page's tool description: far under the 8 MiB of one body, 14 of them far over the budget. */
const PAGE_TEXT = 3 * 1024 * 1024;
const PAGES = 14;

/** A schema whose property holds a chain of `n + 1` `$ref`s in a row (`n` in `$defs`, then a string). */
function chain(n: number): Record<string, unknown> {
  return {
    type: 'object',
    properties: { a: { $ref: '#/$defs/0' } },
    $defs: [...Array.from({ length: n }, (_, i) => ({ $ref: `#/$defs/${i + 1}` })), { type: 'string' }],
  };
}

const CYCLE = {
  type: 'object',
  properties: { x: { $ref: '#/$defs/a' } },
  $defs: { a: { $ref: '#/$defs/b' }, b: { allOf: [{ $ref: '#/$defs/a' }] } },
};

interface SetAnswer {
  server: RedactedMcpServer;
}

/**
 * Discovery's bounds over a whole probe and over what it keeps, against real SDK servers on
 * loopback: a server that answers page after page, each within one body's bound; a config that
 * names another server's secret; tools whose input schemas are odd, deep, or past the bounds a document keeps.
 */
describe('discovery bounds', () => {
  let h: RegistryHarness;
  const closers: Array<() => Promise<void>> = [];
  const track = (s: TestMcpServer): TestMcpServer => {
    closers.push(() => s.close());
    return s;
  };

  beforeAll(async () => {
    h = await RegistryHarness.start({ projector: false });
  });
  afterAll(async () => {
    for (const close of closers) await close().catch(() => undefined);
    await h?.stop();
  });

  for (const era of ['legacy', 'modern'] as const) {
    it(`${era}: pages each under the body bound but together over the budget end in an error naming maxTotalBytes; the next discovery has a budget of its own`, async () => {
      const pages: TestTool[] = Array.from({ length: PAGES }, (_, i) => ({
        ...echoTool(),
        name: `page${i}`,
        description: String.fromCharCode(97 + i).repeat(PAGE_TEXT),
      }));
      const up = track(await startTestMcpServer({ era, tools: pages, pageSize: 1 }));
      const api = h.api();
      const { server } = await api.act<SetAnswer>('SetMcpServer', { name: 'pager', config: { url: up.url } });
      expect(server.status.state).toBe('error');
      expect(server.status.error).toContain(`(bound maxTotalBytes = ${BUDGET} bytes)`);
      expect(server.status.error).toContain(`response from ${new URL(up.url).origin} too large`);
      expect(server.tools).toEqual([]);
      // Cut once the budget was spent: about 11 pages of 3 MiB, never all 14 (nor the 50-page cap).
      expect(up.stats.listCalls).toBeGreaterThanOrEqual(Math.floor(BUDGET / PAGE_TEXT));
      expect(up.stats.listCalls).toBeLessThan(PAGES);

      // The same server with a list that fits: the budget was that discovery's, not the server's.
      up.setTools([echoTool()]);
      const again = await api.act<SetAnswer>('RefreshMcpServer', { name: 'pager' });
      expect(again.server.status.state).toBe('ok');
      expect(again.server.tools.map((t) => t.name)).toEqual(['echo']);
    });
  }

  it('a config that names another server secret (written before the rule) sends nothing of it, even to the same origin', async () => {
    const VAULT_KEY = 'vault-key-7f3a91-MUST-STAY';
    const up = track(await startTestMcpServer());
    const api = h.api();
    expect(
      (
        await api.act<SetAnswer>('SetMcpServer', {
          name: 'vault',
          config: { url: up.url, secretHeaders: { 'X-Api-Key': VAULT_KEY } },
        })
      ).server.status.state,
    ).toBe('ok');
    // The genuine server sent its own secret.
    expect(up.stats.headersSeen.get('x-api-key')).toContain(VAULT_KEY);
    expect(
      (await api.act<SetAnswer>('SetMcpServer', { name: 'other', config: { url: up.url } })).server.status.state,
    ).toBe('ok');

    // A direct write: `other` names vault's secret (the action refuses this; old rows may hold it).
    // Loopback http allowed for this connection, as the registry's own allows it under the local profile.
    const sql = createDb(h.db.url, { allowHttpHosts: ['127.0.0.1'], max: 1 });
    closers.push(() => sql.destroy());
    const row = await sql
      .selectFrom('registry.mcp_servers')
      .select('config_cbor')
      .where('account_id', '=', api.principal)
      .where('name', '=', 'other')
      .executeTakeFirstOrThrow();
    const config = decodePayload<Record<string, unknown>>(row.config_cbor);
    await sql
      .updateTable('registry.mcp_servers')
      .set({ config_cbor: encodePayload({ ...config, secretRefs: { 'X-Stolen': 'mcp-vault-x-api-key' } }) })
      .where('account_id', '=', api.principal)
      .where('name', '=', 'other')
      .execute();

    const listsBefore = up.stats.listCalls;
    const refreshed = await api.act<SetAnswer>('RefreshMcpServer', { name: 'other' });
    expect(refreshed.server.status.state).toBe('ok');
    expect(up.stats.listCalls).toBeGreaterThan(listsBefore);
    expect(up.stats.headersSeen.get('x-stolen')).toBeUndefined();
    // And vault still has its own.
    const seen = (up.stats.headersSeen.get('x-api-key') ?? []).length;
    expect((await api.act<SetAnswer>('RefreshMcpServer', { name: 'vault' })).server.status.state).toBe('ok');
    expect((up.stats.headersSeen.get('x-api-key') ?? []).length).toBeGreaterThan(seen);
  });

  for (const era of ['legacy', 'modern'] as const) {
    it(`${era}: no tool is skipped for its schema's shape or depth; only a schema past 256 KiB or 256 levels, named in the status and in servers show`, async () => {
      const tool = (name: string, inputSchema: Record<string, unknown>): TestTool => ({
        ...echoTool(),
        name,
        inputSchema,
      });
      const wide = {
        type: 'object',
        properties: Object.fromEntries(Array.from({ length: 12_000 }, (_, i) => [`p${i}`, {}])),
      };
      const kept = [
        tool('deep_ok', chain(63)),
        // $ref cycles and chains longer than the validator follows: the validator lets that part through.
        tool('cycle', CYCLE),
        tool('chain65', chain(64)),
        tool('chain10k', chain(9_900)),
        tool('self', { type: 'object', $ref: '#' }),
        // 40 levels of properties (81 of JSON), and 12,000 subschemas.
        tool('deep40', deepSchema(40)),
        tool('wide', wide),
      ];
      const up = track(
        await startTestMcpServer({
          era,
          tools: [
            echoTool(),
            ...kept,
            tool('huge', { type: 'object', description: 'x'.repeat(300 * 1024) }),
            tool('abyss', deepSchema(130)),
          ],
        }),
      );
      const api = h.api();
      const { server } = await api.act<SetAnswer>('SetMcpServer', { name: 'schemas', config: { url: up.url } });
      expect(server.status.error).toBeUndefined();
      expect(server.status.state).toBe('ok');
      expect(server.tools.map((t) => t.name)).toEqual(['echo', ...kept.map((t) => t.name)]);
      // Kept whole.
      for (const t of kept)
        expect(server.tools.find((s) => s.name === t.name)?.inputSchema, t.name).toEqual(t.inputSchema);
      expect(server.status.skippedTools).toEqual([
        { name: 'huge', reason: 'its input schema is larger than 262144 bytes of JSON' },
        { name: 'abyss', reason: 'its input schema is nested deeper than 256 levels of JSON' },
      ]);
      expect(up.stats.calls).toBe(0);

      const { env } = cliEnvFor(api);
      const show = await runCli(['servers', 'show', 'schemas'], env);
      expect(show.code).toBe(0);
      expect(show.stdout).toContain('skipped tool: huge — its input schema is larger than 262144 bytes of JSON');
      expect(show.stdout).toContain('skipped tool: abyss — its input schema is nested deeper than 256 levels of JSON');
    });
  }
});
