import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RedactedMcpServer } from '@mcpx/contracts';
import { approvalTools, stoppedCall } from '../approvals/approval-tools.js';
import { startOAuthServer, startProtectedMcpServer, startTestMcpServer, type TestMcpServer, type TestOAuthServer } from '../servers/index.js';
import { ProxySystem } from '../support/proxy-system.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const HAS_CHROMIUM = existsSync(CHROMIUM);
/** Without the background-networking flags Chromium dials out, and a closed network refuses it. */
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
if (!HAS_CHROMIUM) console.warn(`console-browser: skipped, no Chromium at ${CHROMIUM} (install chromium or set CHROMIUM_PATH)`);
/** A header value the page must never hold once it is saved. */
const SECRET = 'acme-5d20c7e1-never-in-the-page';

/**
 * The console driven in a real Chromium against the real system (registry, projector and proxy on
 * real NATS, Postgres and Redis), real MCP servers on loopback and a real OAuth authorization
 * server: a key, an agent, a server with custom headers, an oauth server authorized in a popup
 * (abandoned once, then resumed), and a destructive call approved from the approvals view.
 */
describe.skipIf(!HAS_CHROMIUM)(`the console in a real browser${HAS_CHROMIUM ? '' : ` (skipped: no Chromium at ${CHROMIUM}; install it or set CHROMIUM_PATH)`}`, () => {
  let system: ProxySystem;
  let acme: TestMcpServer;
  let as: TestOAuthServer;
  let guarded: TestMcpServer;
  let userDataDir: string;
  let context: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    [system, acme, as] = await Promise.all([
      ProxySystem.start(),
      startTestMcpServer({ tools: approvalTools(), requireHeader: { name: 'X-Acme-Token', value: SECRET } }),
      startOAuthServer(),
    ]);
    guarded = await startProtectedMcpServer(as);
    userDataDir = mkdtempSync(join(tmpdir(), 'mcpx-console-'));
    context = await chromium.launchPersistentContext(userDataDir, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
    context.setDefaultTimeout(20_000);
    page = context.pages()[0] ?? (await context.newPage());
    await page.goto(`${system.api.apiUrl}/console/`);
  });

  afterAll(async () => {
    await context?.close();
    if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
    await system?.stop();
    await Promise.all([acme?.close(), guarded?.close()]);
    await as?.close();
  });

  /** Everything the page holds: its markup and every field's current value. */
  const pageText = (): Promise<string> =>
    page.evaluate<string>("document.documentElement.outerHTML + [...document.querySelectorAll('input, textarea')].map((e) => e.value).join('\\n')");

  const server = (name: string) => page.locator(`#server-list li[data-server="${name}"]`);

  async function openAddDialog(url: string, name: string, auth: 'oauth' | 'bearer' | 'headers' | 'none'): Promise<void> {
    await page.click('#server-add');
    await page.fill('#add-form input[name="url"]', url);
    await page.fill('#add-form input[name="name"]', name);
    await page.check(`#add-form input[name="auth"][value="${auth}"]`);
  }

  it('signs with a key made in the browser, then with a key file, and creates an agent', async () => {
    await page.click('#key-new');
    await page.locator('body[data-live="true"]').waitFor(); // the signed event stream is open
    expect(await page.locator('#principal').textContent()).toMatch(/^account /);
    await Promise.all([page.waitForEvent('load'), page.click('#key-forget')]);

    await page.click('#key-paste');
    await page.fill('#key-text', JSON.stringify(system.api.key));
    await page.click('#key-use');
    await page.locator(`#principal[title="${system.account}"]`).waitFor();
    await page.locator('body[data-live="true"]').waitFor();

    await page.fill('#agent-name', 'helper');
    await page.click('#agent-create');
    await page.locator('#agent-select option', { hasText: 'helper' }).waitFor({ state: 'attached' });
    expect(await page.locator('#message').getAttribute('class')).not.toContain('error');
  });

  it('adds a server with custom headers one per line: a bad line is named, the values never stay in the page', async () => {
    await openAddDialog(acme.url, 'acme', 'headers');
    await page.fill('#add-form textarea[name="headers"]', `X-Acme-Token: ${SECRET}\nX-Tenant acme\n\nContent-Type: text/plain`);
    await page.click('#add-save');
    await page.locator('#add-errors li[data-line="2"]', { hasText: 'no colon' }).waitFor();
    await page.locator('#add-errors li[data-line="4"]', { hasText: 'Content-Type is set by the transport' }).waitFor();
    expect(await page.locator('#add-errors li').count()).toBe(2);
    expect((await system.api.act<{ servers: RedactedMcpServer[] }>('ListMcpServers')).servers).toEqual([]);

    await page.fill('#add-form textarea[name="headers"]', `X-Acme-Token: ${SECRET}\nX-Tenant: acme`);
    await page.click('#add-save');
    await page.locator('#add-dialog').waitFor({ state: 'hidden' });
    await server('acme').locator('.chip[data-state="ok"]', { hasText: '3 tools' }).waitFor();
    await server('acme').locator('strong').click();
    await server('acme').locator('.tools li', { hasText: 'acme__drop_table' }).waitFor();
    // Granted to the agent on the spot; the projection reaches the page through the event stream.
    await page.locator('#tool-index', { hasText: 'acme__drop_table' }).waitFor();

    expect(acme.stats.headersSeen.get('x-acme-token')).toContain(SECRET);
    expect(acme.stats.headersSeen.get('x-tenant')).toContain('acme');
    const { servers } = await system.api.act<{ servers: RedactedMcpServer[] }>('ListMcpServers');
    expect(servers[0]).toMatchObject({ name: 'acme', auth: 'headers', headerNames: [], secretHeaderNames: ['X-Acme-Token', 'X-Tenant'] });
    expect(await pageText()).not.toContain(SECRET);
  });

  it('authorizes an oauth server in a popup: abandoned once, resumed with Authorize, then connected', async () => {
    const authorizeUrl = (url: URL): boolean => url.href.startsWith(`${as.issuer}authorize`);
    // The first time the owner walks away: the authorization page just sits there.
    await context.route(authorizeUrl, (route) => route.fulfill({ status: 200, contentType: 'text/html', body: '<p>Sign in?</p>' }));
    await openAddDialog(guarded.url, 'guarded', 'oauth');
    const [first] = await Promise.all([page.waitForEvent('popup'), page.click('#add-save')]);
    await first.waitForURL(authorizeUrl);
    const asked = new URL(first.url());
    expect(asked.searchParams.get('code_challenge_method')).toBe('S256');
    expect(asked.searchParams.get('redirect_uri')).toBe(`${system.api.apiUrl}/v1/oauth/callback`);
    expect(asked.searchParams.get('resource')).toBe(guarded.url);
    expect(await first.evaluate<unknown>('window.opener')).toBeNull(); // the authorization server gets no handle on the console
    await first.close();
    await server('guarded').locator('.chip[data-state="auth_required"]').waitFor();
    await page.locator('#message', { hasText: 'guarded: not authorized yet' }).waitFor(); // the console saw the popup go
    expect(as.stats.codeExchanges).toBe(0);

    // Resumed: a fresh URL; the test server approves at once and the callback closes the popup.
    await context.unroute(authorizeUrl);
    const callback = context.waitForEvent('response', (r) => r.url().startsWith(`${system.api.apiUrl}/v1/oauth/callback?`));
    const [second] = await Promise.all([page.waitForEvent('popup'), server('guarded').getByRole('button', { name: 'Authorize' }).click()]);
    if (!second.isClosed()) await second.waitForEvent('close');
    // The callback page closed itself under a policy that runs its one hashed script and nothing else.
    const csp = (await callback).headers()['content-security-policy'] ?? '';
    expect(csp).toMatch(/^default-src 'none'; script-src 'sha256-[A-Za-z0-9+/=]+';/);
    expect(csp).not.toContain('unsafe');
    await server('guarded').locator('.chip[data-state="ok"]', { hasText: '2 tools' }).waitFor();
    await page.locator('#message', { hasText: 'guarded: connected, 2 tools' }).waitFor();
    expect(as.stats.codeExchanges).toBe(1);
    expect(await server('guarded').getByRole('button', { name: 'Authorize' }).count()).toBe(0);
  });

  it('shows a call that asks in the approvals view, live; Approve lets the re-sent call run, Deny refuses it', async () => {
    const agent = await page.locator('#agent-select').inputValue();
    const id = await stoppedCall(system, agent, 'browser-run', 'acme__drop_table', { table: 'users' });
    const item = page.locator(`#approval-list li[data-approval="${id}"]`);
    await item.locator('strong', { hasText: 'acme__drop_table' }).waitFor();
    expect(await item.locator('.arguments').textContent()).toContain('"users"');
    expect(await item.textContent()).toContain('agent helper');
    await item.getByRole('button', { name: 'Approve' }).click();
    await item.waitFor({ state: 'detached' });
    const out = await system.call(agent, 'browser-run', 'acme__drop_table', { table: 'users' }, { approvalId: id });
    expect(out.result.text).toBe('dropped users');

    const refused = await stoppedCall(system, agent, 'browser-run', 'acme__drop_table', { table: 'orders' });
    const other = page.locator(`#approval-list li[data-approval="${refused}"]`);
    await other.getByRole('button', { name: 'Deny' }).click();
    await other.waitFor({ state: 'detached' });
    const err = await system.callError(agent, 'browser-run', 'acme__drop_table', { table: 'orders' }, { approvalId: refused });
    expect(err.code).toBe('approval_refused');
    await page.locator('#approvals-empty').waitFor();
    expect(await pageText()).not.toContain(SECRET);
  });
});
