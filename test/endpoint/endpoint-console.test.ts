import { rmSync } from 'node:fs';
import { type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { eventually } from '../support/system.js';
import { startEndpointSystem, type EndpointSystem } from './endpoint-harness.js';
import { HAS_CHROMIUM, sayIfNoChromium } from '../support/chromium.js';
import { launchConsoleBrowser } from '../support/fixtures/console-browser.js';

sayIfNoChromium('endpoint-console: skipped');

const LIST = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
const HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2025-11-25',
};

/**
 * The console's endpoint view in a real Chromium against the real system: the agent's endpoint
 * URL, a token made from the page (shown once, and it opens the endpoint), the token list, and a
 * revoke from the page that the endpoint obeys at once.
 */
describe.skipIf(!HAS_CHROMIUM)('the console shows each agent’s MCP endpoint and manages its tokens', () => {
  let sys: EndpointSystem;
  let upstream: TestMcpServer;
  let userDataDir: string;
  let context: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    [sys, upstream] = await Promise.all([startEndpointSystem(), startTestMcpServer({ era: 'modern' })]);
    ({ userDataDir, context, page } = await launchConsoleBrowser('mcpx-endpoint-console-', 20_000));
    await page.goto(`${sys.system.api.apiUrl}/console/`);
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
    await sys?.stop();
    await upstream?.close();
  });

  it('makes a token that opens the endpoint, lists it, and revokes it', async () => {
    await page.locator('#key-new').click();
    await page.locator('#principal').filter({ hasText: 'account' }).waitFor();
    // The console shows one room at a time: agents, then the endpoint's.
    await page.evaluate("location.hash = '#/agents'");
    await page.locator('#agent-name').fill('browser');
    await page.locator('#agent-create').click();
    await page.locator('#agent-page h2', { hasText: 'browser' }).waitFor();
    await page.evaluate("location.hash = '#/endpoint'");
    await page.locator('#endpoint-url').filter({ hasText: '/v1/agents/' }).waitFor();
    // Point the page at this system's endpoint service.
    await page.locator('#endpoint-base').fill(sys.endpoint.url);
    await page.locator('#endpoint-base').dispatchEvent('change');
    const url = (await page.locator('#endpoint-url').filter({ hasText: sys.endpoint.url }).textContent()) ?? '';
    expect(url).toMatch(/\/v1\/agents\/[^/]+\/mcp$/);

    await page.locator('#endpoint-token-name').fill('from the browser');
    await page.locator('#endpoint-token-create').click();
    const token = ((await page.locator('#endpoint-new-token code.token').textContent()) ?? '').trim();
    expect(token).toMatch(/^mcpx_at_/);
    expect(await page.locator('#endpoint-snippet').textContent()).toContain(token);
    await page.locator('#endpoint-tokens li', { hasText: 'from the browser' }).waitFor();

    const res = await fetch(url, {
      method: 'POST',
      headers: { ...HEADERS, authorization: `Bearer ${token}` },
      body: LIST,
    });
    expect(res.status).toBe(200);

    const row = page.locator('#endpoint-tokens li', { hasText: 'from the browser' });
    await row.getByRole('button', { name: 'Revoke' }).click();
    await row.locator('.chip', { hasText: 'revoked' }).waitFor();
    await eventually(
      async () =>
        (await fetch(url, { method: 'POST', headers: { ...HEADERS, authorization: `Bearer ${token}` }, body: LIST }))
          .status === 401
          ? true
          : undefined,
      5_000,
      'revoked',
    );

    // Reloaded, the page holds the token nowhere (it was shown once).
    await page.reload();
    await page.locator('#endpoint-tokens li', { hasText: 'from the browser' }).waitFor();
    expect(await page.content()).not.toContain(token);
  });

  it('makes a token whose user may approve its always_ask calls, and says so in the list', async () => {
    await page.locator('#endpoint-token-name').fill('approving laptop');
    await page.locator('#endpoint-token-approve').check();
    await page.locator('#endpoint-token-create').click();
    await page
      .locator('#endpoint-tokens li', { hasText: 'approving laptop' })
      .filter({ hasText: 'its user may approve' })
      .waitFor();
    expect(await page.locator('#endpoint-token-approve').isChecked()).toBe(false);
    // The list is the registry's ListAgentTokens (the page's own account): only that token has the right.
    expect(await page.locator('#endpoint-tokens li', { hasText: 'from the browser' }).textContent()).not.toContain(
      'its user may approve',
    );
  });
});
