import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page, type Route } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RedactedMcpServer } from '@mcpx/contracts';
import { approvalTools, stoppedCall } from '../approvals/approval-tools.js';
import { startOAuthServer, startProtectedMcpServer, startTestMcpServer, type TestMcpServer, type TestOAuthServer } from '../servers/index.js';
import { ProxySystem } from '../support/proxy-system.js';
import { eventually } from '../support/system.js';
import { vendorTools } from './vendor-tools.js';

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
/** The vendor token a built-in server borrows. */
const VENDOR_TOKEN = 'gho_consolePermissions';

/**
 * The console driven in a real Chromium against the real system (registry, projector and proxy on
 * real NATS, Postgres and Redis), real MCP servers on loopback and a real OAuth authorization
 * server: a key, an agent, a server with custom headers, an oauth server authorized in a popup
 * (abandoned once, then resumed), a destructive call approved from the approvals view, and tool
 * permission levels overridden from the tool list (custom and built-in servers alike).
 */
describe.skipIf(!HAS_CHROMIUM)(`the console in a real browser${HAS_CHROMIUM ? '' : ` (skipped: no Chromium at ${CHROMIUM}; install it or set CHROMIUM_PATH)`}`, () => {
  let system: ProxySystem;
  let acme: TestMcpServer;
  let as: TestOAuthServer;
  let guarded: TestMcpServer;
  let vendor: TestMcpServer;
  let userDataDir: string;
  let context: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    vendor = await startTestMcpServer({ tools: vendorTools(), requireHeader: { name: 'Authorization', value: `Bearer ${VENDOR_TOKEN}` } });
    [system, acme, as] = await Promise.all([
      ProxySystem.start({ env: { BUILTIN_ENDPOINTS: `github=${vendor.url}` } }),
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
    await Promise.all([acme?.close(), guarded?.close(), vendor?.close()]);
    await as?.close();
  });

  /** Everything the page holds: its markup and every field's current value. */
  const pageText = (): Promise<string> =>
    page.evaluate<string>("document.documentElement.outerHTML + [...document.querySelectorAll('input, textarea')].map((e) => e.value).join('\\n')");

  const server = (name: string) => page.locator(`#server-list li[data-server="${name}"]`);
  /** The permission control of a tool, found by its label as assistive technology finds it. */
  const permissionOf = (toolName: string) => page.getByLabel(`permission of ${toolName}`, { exact: true });
  const chosen = (toolName: string) => permissionOf(toolName).locator('option:checked');

  /**
   * Through the page: `tool` (read-only, of server `slug`) goes to always ask and its row follows;
   * a real call through the proxy then stops for a human (denied from the approvals view); back to
   * inherited, the next call runs. The proxy follows the projection, so the calls are retried until
   * it has (a bounded wait, never a timing assertion).
   */
  async function overrideAndCall(slug: string, tool: string, args: Record<string, unknown>, expected: string): Promise<void> {
    const agent = await page.locator('#agent-select').inputValue();
    const toolName = `${slug}__${tool}`;
    const row = (state: string) => server(slug).locator(`.tools li[data-tool="${tool}"]${state}`);
    await permissionOf(toolName).focus();
    await permissionOf(toolName).selectOption('always_ask');
    await row('[data-permission="always_ask"][data-overridden="true"]').waitFor();
    expect(await chosen(toolName).textContent()).toBe('always ask');
    // The list was drawn again on the reply: the keyboard focus came back to the control.
    await page.waitForFunction(`document.activeElement?.getAttribute('aria-label') === 'permission of ${toolName}'`);
    const run = `permissions-${slug}`;
    const id = await eventually(() => stoppedCall(system, agent, run, toolName, args).catch(() => undefined), 15_000, `${toolName} to ask`);
    const approval = page.locator(`#approval-list li[data-approval="${id}"]`);
    await approval.getByRole('button', { name: 'Deny' }).click();
    await approval.waitFor({ state: 'detached' });

    await permissionOf(toolName).selectOption('');
    await row('[data-permission="act"]:not([data-overridden])').waitFor();
    expect(await chosen(toolName).textContent()).toBe('inherited (act)');
    const out = await eventually(() => system.call(agent, run, toolName, args).catch(() => undefined), 15_000, `${toolName} to act again`);
    expect(out.result.text).toBe(expected);
  }

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

  it('shows the permission level of each tool and lets the owner override it; a failed change stays next to its tool', async () => {
    const dialogs: string[] = [];
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    // acme was expanded above; each tool carries a labelled control.
    await server('acme').locator('.tools li[data-tool="drop_table"][data-permission="always_ask"]:not([data-overridden])').waitFor();
    expect(await permissionOf('acme__drop_table').inputValue()).toBe('');
    expect(await chosen('acme__drop_table').textContent()).toBe('inherited (always ask)');
    expect(await chosen('acme__add').textContent()).toBe('inherited (act)');
    expect(await chosen('acme__echo').textContent()).toBe('inherited (act)');

    await overrideAndCall('acme', 'add', { a: 1, b: 2 }, '3');

    // The network fails under the change: the error is shown inline, the control shows what the
    // registry holds, and the next change clears the error.
    const setPermission = (route: Route) => ((route.request().postDataJSON() as { action?: { type?: string } } | null)?.action?.type === 'SetToolPermission' ? route.abort() : route.continue());
    await page.route('**/v1/actions', setPermission);
    await permissionOf('acme__echo').selectOption('always_ask');
    const echo = server('acme').locator('.tools li[data-tool="echo"]');
    await echo.locator('.permission-error', { hasText: 'not changed' }).waitFor();
    expect(await permissionOf('acme__echo').inputValue()).toBe('');
    expect(await permissionOf('acme__echo').getAttribute('aria-invalid')).toBe('true');
    expect(await page.locator('#message').getAttribute('class')).not.toContain('error');
    await page.unroute('**/v1/actions', setPermission);
    await permissionOf('acme__echo').selectOption('act');
    await server('acme').locator('.tools li[data-tool="echo"][data-overridden="true"]').waitFor();
    expect(await echo.locator('.permission-error').count()).toBe(0);
    await permissionOf('acme__echo').selectOption('');
    await server('acme').locator('.tools li[data-tool="echo"]:not([data-overridden])').waitFor();
    expect(dialogs).toEqual([]);
  });

  it('overrides the tools of a built-in server the same way', async () => {
    // The vendor connection lights the built-in up; the page learns of it from the event stream.
    await system.api.act('SetVendorConnection', { vendor: 'github', accessToken: VENDOR_TOKEN });
    await server('github').locator('input[type="checkbox"]').click();
    await page.locator('#tool-index', { hasText: 'github__get_issue' }).waitFor();
    await server('github').locator('strong').click();
    await server('github').locator('.tools li[data-tool="create_issue"][data-permission="always_ask"]').waitFor();
    expect(await chosen('github__create_issue').textContent()).toBe('inherited (always ask)');
    expect(await chosen('github__get_issue').textContent()).toBe('inherited (act)');
    await overrideAndCall('github', 'get_issue', { owner: 'o', repo: 'r', issue_number: 7 }, 'issue 7');

    // A change made elsewhere (here the API) reaches the row live, through mcp-servers-changed.
    const createIssue = (state: string) => server('github').locator(`.tools li[data-tool="create_issue"]${state}`);
    await system.api.act('SetToolPermission', { server: 'github', tool: 'create_issue', permission: 'act' });
    await createIssue('[data-permission="act"][data-overridden="true"]').waitFor();
    expect(await chosen('github__create_issue').textContent()).toBe('act');
    expect(await permissionOf('github__create_issue').locator('option[value=""]').textContent()).toBe('inherited (always ask)');
    await system.api.act('SetToolPermission', { server: 'github', tool: 'create_issue', permission: null });
    await createIssue('[data-permission="always_ask"]:not([data-overridden])').waitFor();
  });
});
