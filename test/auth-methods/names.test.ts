import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RedactedMcpServer } from '@mcpx/contracts';
import { BUILTIN_SERVERS } from '@mcpx/domain';
import { startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { RegistryHarness } from '../support/registry-harness.js';
import { eventually } from '../support/system.js';

for (const style of ['double_underscore', 'prefixed'] as const) {
  describe(`names under TOOL_NAME_STYLE=${style}`, () => {
    let h: RegistryHarness;
    let upstream: TestMcpServer;

    beforeAll(async () => {
      upstream = await startTestMcpServer({ era: 'modern' });
      // No background probe of the just-lit built-in within the test: its fallback list serves.
      h = await RegistryHarness.start({
        registry: { reprobe: { baseMs: 600_000 } },
        env: { TOOL_NAME_STYLE: style, BUILTIN_ENDPOINTS: `linear=${upstream.url}` },
      });
    });
    afterAll(async () => {
      await h?.stop();
      await upstream?.close();
    });

    it('refuses a custom slug equal to a built-in by name, writing nothing', async () => {
      const api = h.api();
      await api.act('SetVendorConnection', { vendor: 'linear', accessToken: 'lin_tok' });
      // The built-in's fallback list is projected asynchronously: let it land before the digest.
      await eventually(() =>
        h.sql
          .selectFrom('projector.projected_servers')
          .select('server')
          .where('account_id', '=', api.principal)
          .where('server', '=', 'linear')
          .executeTakeFirst(),
      );
      const before = await h.settledDigest();
      for (const slug of BUILTIN_SERVERS.keys()) {
        await expect(api.act('SetMcpServer', { name: slug, config: { url: upstream.url } })).rejects.toMatchObject({
          code: 'invalid_input',
          details: { field: 'name', builtin: true },
        });
      }
      expect(await h.tableDigest()).toEqual(before);
    });

    it('keeps (account, slug) unique: a second set of a name updates the one record', async () => {
      const api = h.api();
      const first = (
        await api.act<{ server: RedactedMcpServer }>('SetMcpServer', {
          name: 'acme_tools',
          config: { url: upstream.url },
        })
      ).server;
      const second = (
        await api.act<{ server: RedactedMcpServer }>('SetMcpServer', {
          name: 'acme_tools',
          config: { url: upstream.url, auth: 'none' },
        })
      ).server;
      expect(second.id).toBe(first.id);
      expect((await api.act('ListMcpServers')).servers.map((s: RedactedMcpServer) => s.name)).toEqual(['acme_tools']);
      await expect(
        h.sql
          .insertInto('registry.mcp_servers')
          .values({
            id: crypto.randomUUID(),
            account_id: api.principal,
            name: 'acme_tools',
            url: 'https://x.example/mcp',
            config_cbor: new Uint8Array([0xa0]),
            tools_cbor: new Uint8Array([0x80]),
            tools_hash: '',
            generation: 0,
            status_cbor: new Uint8Array([0xa0]),
          })
          .execute(),
      ).rejects.toMatchObject({ code: '23505' });
    });

    it('projects tool names in the style, built-ins included', async () => {
      const api = h.api();
      await api.act('SetMcpServer', { name: 'acme', config: { url: upstream.url } });
      await api.act('SetVendorConnection', { vendor: 'linear', accessToken: 'lin_tok' });
      await api.act('CreateAgent', { name: 'n', definition: { mcpServers: ['acme', 'linear'] } });
      const names = await eventually(async () => {
        const tools = ((await api.act('ListAgentTools', { agent: 'n' })).tools as Array<{ name: string }>)
          .map((t) => t.name)
          .sort();
        return tools.length === 5 ? tools : undefined;
      });
      expect(names).toEqual(
        style === 'prefixed'
          ? [
              'mcp_acme_add',
              'mcp_acme_echo',
              'mcp_linear_create_issue',
              'mcp_linear_get_issue',
              'mcp_linear_list_issues',
            ]
          : ['acme__add', 'acme__echo', 'linear__create_issue', 'linear__get_issue', 'linear__list_issues'],
      );
    });

    if (style === 'prefixed') {
      it('applies the prefixed slug grammar (docs/names.md)', async () => {
        const api = h.api();
        for (const bad of ['a', '1acme', 'has-dash', 'Acme', 'x'.repeat(32), 'a__b']) {
          await expect(
            api.act('SetMcpServer', { name: bad, config: { url: upstream.url } }),
            bad,
          ).rejects.toMatchObject({ code: 'invalid_input', details: { field: 'name' } });
        }
        expect(
          (await api.act('SetMcpServer', { name: 'ab', config: { url: upstream.url } })).server.tools
            .map((t: { toolName: string }) => t.toolName)
            .sort(),
        ).toEqual(['mcp_ab_add', 'mcp_ab_echo']);
      });
    }
  });
}
