import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb } from '@mcpx/db';
import { setupTelemetry, type Telemetry } from '@mcpx/telemetry';
import { startBadOAuthServer, type BadOAuthMode, type BadOAuthServer } from '../servers/bad-oauth-server.js';
import { ApiClient } from '../support/api-client.js';
import { InProcessSystem } from '../support/system.js';

/**
 * Bad OAuth input from a remote server: the record is saved `auth_required` with a clear
 * `authorizationError`, no authorization URL, and nothing OAuth-related is stored. The
 * `resource_metadata` URL of the server's challenge (not a well-known path) is what is followed.
 */
describe('OAuth against bad metadata', () => {
  let telemetry: Telemetry;
  let system: InProcessSystem;
  const servers: BadOAuthServer[] = [];

  beforeAll(async () => {
    telemetry = await setupTelemetry({ serviceName: 'mcpx-oauth-bad', spanExporter: new InMemorySpanExporter() });
    system = await InProcessSystem.start({ telemetry });
  });

  afterAll(async () => {
    await system?.stop();
    for (const s of servers) await s.close();
    await telemetry?.shutdown();
  });

  const cases: Array<[BadOAuthMode, RegExp]> = [
    ['mismatch', /Protected resource https:\/\/elsewhere.example\/mcp does not match/],
    ['oversized', /larger than 64 KiB/],
    ['malformed', /malformed OAuth metadata: issuer/],
    ['not-json', /not valid JSON/],
  ];

  it.each(cases)('%s metadata: a clear authorizationError, no URL, nothing stored', async (mode, message) => {
    const bad = await startBadOAuthServer(mode);
    servers.push(bad);
    const api = new ApiClient(system.apiUrl);
    const set = await api.act('SetMcpServer', {
      name: `bad_${mode.replace('-', '_')}`,
      config: { url: bad.url, auth: 'oauth' },
    });
    expect(set.server.status.state).toBe('auth_required');
    expect(set.authorizationUrl).toBeUndefined();
    expect(set.authorizationError).toMatch(/^OAuth: /);
    expect(set.authorizationError).toMatch(message);
    // The challenge's resource_metadata URL was followed, and nothing was registered.
    expect(bad.requests).toContain('GET /meta/prm');
    expect(bad.requests.some((r) => r.includes('/register') || r.includes('/token'))).toBe(false);
    const db = createDb(system.env.DATABASE_URL!, { max: 1 });
    try {
      const rows = await db
        .selectFrom('registry.oauth_connections')
        .selectAll()
        .where('account_id', '=', api.principal)
        .execute();
      expect(rows).toEqual([]);
    } finally {
      await db.destroy();
    }
  });
});
