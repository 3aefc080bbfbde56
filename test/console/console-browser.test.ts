import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { type BrowserContext, type Page, type Route } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RedactedMcpServer } from '@mcpx/contracts';
import { approvalTools, stoppedCall } from '../approvals/approval-tools.js';
import {
  startOAuthServer,
  startProtectedMcpServer,
  startTestMcpServer,
  type TestMcpServer,
  type TestOAuthServer,
} from '../servers/index.js';
import { ProxySystem } from '../support/proxy-system.js';
import { eventually } from '../support/system.js';
import { vendorTools } from './vendor-tools.js';
import { CHROMIUM, HAS_CHROMIUM, sayIfNoChromium } from '../support/chromium.js';
import { launchConsoleBrowser } from '../support/fixtures/console-browser.js';
import { closedPort } from '../support/fixtures/closed-port.js';

sayIfNoChromium('console-browser: skipped');
/** A header value the page must never hold once it is saved. */
const SECRET = 'acme-5d20c7e1-never-in-the-page';
/** The client secret of a machine (client credentials) server: never in the page once saved. */
const MACHINE_SECRET = 'm2m-8f3a61d2-never-in-the-page';
/** The vendor token a built-in server borrows. */
const VENDOR_TOKEN = 'gho_consolePermissions';
/** The agent endpoint's public URL as the deployment sets it (`ENDPOINT_PUBLIC_URL`): the console shows it, never a port of its own. */
const ENDPOINT_PUBLIC_URL = 'https://agents.example.test';
/** Where the walk saves its screenshots (docs/console/ for the project's; unset: none are saved). */
const SHOTS = process.env.MCPX_CONSOLE_SCREENSHOTS;

/**
 * The console driven in a real Chromium against the real system (registry, projector and proxy on
 * real NATS, Postgres and Redis), real MCP servers on loopback and a real OAuth authorization
 * server. The header-guarded server (headers, approvals, permission overrides) and the oauth
 * server of the popup are modern-only (2026-07-28); the machine servers and the built-in vendor
 * endpoint are legacy (2025), so the page is walked against both eras: a key, an agent, a server with custom headers, an oauth server authorized in a popup
 * (abandoned once, then resumed), machine to machine oauth servers (client credentials: no popup),
 * a destructive call approved from the approvals view, and tool permission levels overridden from
 * the tool list (custom and built-in servers alike).
 */
/**
 * A browser on a busy machine (the suite runs files side by side) is slow to draw: each wait is
 * bounded at a minute (the page's own default), each test at three.
 */
const PAGE_WAIT_MS = 60_000;

describe.skipIf(!HAS_CHROMIUM)(
  `the console in a real browser${HAS_CHROMIUM ? '' : ` (skipped: no Chromium at ${CHROMIUM}; install it or set CHROMIUM_PATH)`}`,
  { timeout: 180_000 },
  () => {
    let system: ProxySystem;
    let acme: TestMcpServer;
    let as: TestOAuthServer;
    let guarded: TestMcpServer;
    let machineAs: TestOAuthServer;
    let machine: TestMcpServer;
    let vendor: TestMcpServer;
    let plain: TestMcpServer;
    let userDataDir: string;
    /** What the browser said was wrong: console errors and 404 answers, over the whole file. */
    const consoleErrors: string[] = [];
    const notFound: string[] = [];
    let context: BrowserContext;
    let page: Page;

    beforeAll(async () => {
      vendor = await startTestMcpServer({
        tools: vendorTools(),
        requireHeader: { name: 'Authorization', value: `Bearer ${VENDOR_TOKEN}` },
      });
      [system, acme, as, machineAs] = await Promise.all([
        ProxySystem.start({
          env: {
            BUILTIN_ENDPOINTS: `github=${vendor.url}`,
            // The page is driven at machine speed, and the test acts with the same key beside it
            // (one signer's bucket for both): on a fast box that outran the default 20 actions a
            // second and the page's retries showed as 429s in its console. A person's pace does not.
            RATE_ACTIONS_PER_SIGNER: '200',
            RATE_ACTIONS_PER_SIGNER_BURST: '400',
          },
          registry: { endpoint: { publicUrl: ENDPOINT_PUBLIC_URL } },
        }),
        startTestMcpServer({
          era: 'modern',
          tools: approvalTools(),
          requireHeader: { name: 'X-Acme-Token', value: SECRET },
        }),
        startOAuthServer(),
        startOAuthServer({ clientCredentials: { authMethods: ['client_secret_basic', 'private_key_jwt'] } }),
      ]);
      [guarded, machine, plain] = await Promise.all([
        startProtectedMcpServer(as, { era: 'modern' }),
        startProtectedMcpServer(machineAs),
        startTestMcpServer({ era: 'modern' }),
      ]);
      ({ userDataDir, context, page } = await launchConsoleBrowser('mcpx-console-', PAGE_WAIT_MS));
      page.on('console', (m) => {
        // A request this file aborts on purpose (a failing network) is said by the browser as an error.
        if (m.type() === 'error' && !m.text().includes('net::ERR_FAILED')) consoleErrors.push(m.text());
      });
      page.on('pageerror', (e) => consoleErrors.push(e.message));
      context.on('response', (r) => {
        if (r.status() === 404) notFound.push(r.url());
      });
      await page.goto(`${system.api.apiUrl}/console/`);
    });

    afterAll(async () => {
      await context?.close();
      if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
      await system?.stop();
      await Promise.all([acme?.close(), guarded?.close(), machine?.close(), vendor?.close(), plain?.close()]);
      await Promise.all([as?.close(), machineAs?.close()]);
    });

    /** Everything the page holds: its markup and every field's current value. */
    const pageText = (): Promise<string> =>
      page.evaluate<string>(
        "document.documentElement.outerHTML + [...document.querySelectorAll('input, textarea')].map((e) => e.value).join('\\n')",
      );

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
    async function overrideAndCall(
      slug: string,
      tool: string,
      args: Record<string, unknown>,
      expected: string,
    ): Promise<void> {
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
      const id = await eventually(
        () => stoppedCall(system, agent, run, toolName, args).catch(() => undefined),
        PAGE_WAIT_MS,
        `${toolName} to ask`,
      );
      await room('#/approvals');
      const approval = page.locator(`#approval-list li[data-approval="${id}"]`);
      await approval.getByRole('button', { name: 'Deny' }).click();
      await approval.waitFor({ state: 'detached' });
      await room('#/servers');

      await permissionOf(toolName).selectOption('');
      await row('[data-permission="act"]:not([data-overridden])').waitFor();
      expect(await chosen(toolName).textContent()).toBe('inherited (act)');
      const out = await eventually(
        () => system.call(agent, run, toolName, args).catch(() => undefined),
        PAGE_WAIT_MS,
        `${toolName} to act again`,
      );
      expect(out.result.text).toBe(expected);
    }

    /**
     * Opens a room by its address (`#/servers`, `#/agents/<id>`) and waits until that room is
     * shown. The room follows the address on the next hashchange: a wait for any room shown was
     * met by the room being left.
     */
    async function room(hash: string): Promise<void> {
      await page.evaluate(`location.hash = ${JSON.stringify(hash)}`);
      const [name = '', param] = hash.replace(/^#\//, '').split('/');
      // A server's or an agent's own page is a room of its own (router.js).
      const shown = param === undefined ? name : name === 'servers' ? 'server' : 'agent';
      await page.locator(`main > section[data-room="${shown}"]:not(.away):not([hidden])`).waitFor();
    }
    /** The current agent's page (its grants, its tools, its endpoint). */
    const agentPage = async (): Promise<void> => room(`#/agents/${await page.locator('#agent-select').inputValue()}`);

    async function openAddDialog(
      url: string,
      name: string,
      auth: 'oauth' | 'bearer' | 'headers' | 'none',
      grantTo: string[] = [],
    ): Promise<void> {
      await room('#/servers');
      await page.click('#server-add');
      for (const agent of grantTo) await page.check(`#add-grant-list input[aria-label="give it to ${agent}"]`);
      await page.fill('#add-form input[name="url"]', url);
      await page.fill('#add-form input[name="name"]', name);
      await page.check(`#add-form input[name="auth"][value="${auth}"]`);
    }

    it('signs with a key made in the browser, then with a key file, and creates an agent', async () => {
      // No key yet: the first-run screen says what to do.
      await page.locator('#welcome:not(.away)', { hasText: 'Make a key' }).waitFor();
      await page.click('#key-new');
      await page.locator('body[data-live="true"]').waitFor(); // the signed event stream is open
      expect(await page.locator('#principal').textContent()).toMatch(/^account /);
      await Promise.all([page.waitForEvent('load'), page.click('#key-forget')]);

      await page.click('#key-paste');
      await page.fill('#key-text', JSON.stringify(system.api.key));
      await page.click('#key-use');
      await page.locator(`#principal[title="${system.account}"]`).waitFor();
      await page.locator('body[data-live="true"]').waitFor();
      // The key is kept non-extractable in IndexedDB; its seed is nowhere in the page's storage.
      const seed = (system.api.key as { seed: string }).seed;
      // Page code as strings: the test's types have no DOM.
      expect(await page.evaluate<string>('JSON.stringify({ ...localStorage })')).not.toContain(seed);
      const stored = await page.evaluate<{ extractable: boolean; type: string; exported: string }>(`
      new Promise((resolve, reject) => {
        const req = indexedDB.open('mcpx', 1);
        req.onerror = () => reject(req.error);
        req.onsuccess = () => {
          const get = req.result.transaction('keys').objectStore('keys').get('account');
          get.onsuccess = () => {
            const k = get.result.privateKey;
            crypto.subtle.exportKey('pkcs8', k).then(
              () => resolve({ extractable: k.extractable, type: k.type, exported: 'yes' }),
              (e) => resolve({ extractable: k.extractable, type: k.type, exported: e.name }),
            );
          };
        };
      })`);
      expect(stored).toEqual({ extractable: false, type: 'private', exported: 'InvalidAccessError' });
      // A reload signs with the stored key (the event stream opens again).
      await page.reload();
      await page.locator(`#principal[title="${system.account}"]`).waitFor();
      await page.locator('body[data-live="true"]').waitFor();

      await room('#/agents');
      await page.fill('#agent-name', 'helper');
      await page.click('#agent-create');
      await page.locator('#agent-select option', { hasText: 'helper' }).waitFor({ state: 'attached' });
      // Creating ends on the new agent's page, after the lists are read again: a test that moved
      // on when the agent was listed was sent there by the console in the middle of its own steps
      // (the next one's Add server, in the servers room it had just opened, waited for a minute).
      await page.locator('#agent-page[data-agent]:not(.away) h2', { hasText: 'helper' }).waitFor();
      expect(await page.locator('#message').getAttribute('class')).not.toContain('error');
    });

    it('adds a server with custom headers one per line: a bad line is named, the values never stay in the page', async () => {
      await openAddDialog(acme.url, 'acme', 'headers', ['helper']);
      await page.fill(
        '#add-form textarea[name="headers"]',
        `X-Acme-Token: ${SECRET}\nX-Tenant acme\n\nContent-Type: text/plain`,
      );
      await page.click('#add-save');
      await page.locator('#add-errors li[data-line="2"]', { hasText: 'no colon' }).waitFor();
      await page
        .locator('#add-errors li[data-line="4"]', { hasText: 'Content-Type is set by the transport' })
        .waitFor();
      expect(await page.locator('#add-errors li').count()).toBe(2);
      expect((await system.api.act<{ servers: RedactedMcpServer[] }>('ListMcpServers')).servers).toEqual([]);

      await page.fill('#add-form textarea[name="headers"]', `X-Acme-Token: ${SECRET}\nX-Tenant: acme`);
      await page.click('#add-save');
      await page.locator('#add-dialog').waitFor({ state: 'hidden' });
      await server('acme').locator('.chip[data-state="ok"]', { hasText: '3 tools' }).waitFor();
      expect(await server('acme').locator('.chip.era').textContent()).toBe('modern 2026-07-28');
      await server('acme').getByRole('button', { name: 'tools of acme' }).click();
      await server('acme').locator('.tools li', { hasText: 'acme__drop_table' }).waitFor();
      // Granted to the agent ticked in the dialog; the projection reaches the page through the event stream.
      await agentPage();
      await page.locator('#tool-index', { hasText: 'acme__drop_table' }).waitFor();
      await room('#/servers');

      expect(acme.stats.headersSeen.get('x-acme-token')).toContain(SECRET);
      expect(acme.stats.headersSeen.get('x-tenant')).toContain('acme');
      const { servers } = await system.api.act<{ servers: RedactedMcpServer[] }>('ListMcpServers');
      expect(servers[0]).toMatchObject({
        name: 'acme',
        auth: 'headers',
        headerNames: [],
        secretHeaderNames: ['X-Acme-Token', 'X-Tenant'],
      });
      expect(await pageText()).not.toContain(SECRET);
    });

    it('authorizes an oauth server in a popup: abandoned once, resumed with Authorize, then connected', async () => {
      // The popup opens the registry's single-use ticket, which sets the binding cookie and redirects
      // to the authorization server. The first time the owner walks away: the ticket's redirect is
      // read (the browser's interception does not see a redirect's target) and a page standing for
      // the authorization server just sits there.
      const startUrl = (url: URL): boolean => url.href.startsWith(`${system.api.apiUrl}/v1/oauth/start?ticket=`);
      let asked = new URL('about:blank');
      await context.route(startUrl, async (route) => {
        const res = await route.fetch({ maxRedirects: 0 });
        asked = new URL(res.headers()['location'] ?? 'about:blank');
        await route.fulfill({ status: 200, contentType: 'text/html', body: '<p>Sign in?</p>' });
      });
      await openAddDialog(guarded.url, 'guarded', 'oauth');
      const [first] = await Promise.all([page.waitForEvent('popup'), page.click('#add-save')]);
      await first.waitForURL(startUrl);
      await first.locator('text=Sign in?').waitFor();
      expect(asked.href.startsWith(`${as.issuer}authorize`)).toBe(true);
      expect(asked.searchParams.get('code_challenge_method')).toBe('S256');
      expect(asked.searchParams.get('redirect_uri')).toBe(`${system.api.apiUrl}/v1/oauth/callback`);
      expect(asked.searchParams.get('resource')).toBe(guarded.url);
      expect(await first.evaluate<unknown>('window.opener')).toBeNull(); // the authorization server gets no handle on the console
      await first.close();
      await server('guarded').locator('.chip[data-state="auth_required"]').waitFor();
      await page.locator('#message', { hasText: 'guarded: not authorized yet' }).waitFor(); // the console saw the popup go
      expect(as.stats.codeExchanges).toBe(0);

      // Resumed: a fresh URL; the test server approves at once and the callback closes the popup.
      await context.unroute(startUrl);
      const callback = context.waitForEvent('response', (r) =>
        r.url().startsWith(`${system.api.apiUrl}/v1/oauth/callback?`),
      );
      const [second] = await Promise.all([
        page.waitForEvent('popup'),
        server('guarded').getByRole('button', { name: 'Authorize' }).click(),
      ]);
      if (!second.isClosed()) await second.waitForEvent('close');
      // The callback page closed itself under a policy that runs its one hashed script and nothing else.
      const csp = (await callback).headers()['content-security-policy'] ?? '';
      expect(csp).toMatch(/^default-src 'none'; script-src 'sha256-[A-Za-z0-9+/=]+';/);
      expect(csp).not.toContain('unsafe');
      await server('guarded').locator('.chip[data-state="ok"]', { hasText: '2 tools' }).waitFor();
      await page.locator('#message', { hasText: 'guarded: connected, 2 tools' }).waitFor();
      await server('guarded').locator('.chip.era[data-era="modern"]').waitFor();
      expect(as.stats.codeExchanges).toBe(1);
      expect(await server('guarded').getByRole('button', { name: 'Authorize' }).count()).toBe(0);
    });

    /** Opens the add-server dialog on OAuth, machine to machine, for `clientId`. */
    async function openMachineDialog(
      url: string,
      name: string,
      clientId: string,
      grantTo: string[] = [],
    ): Promise<void> {
      await openAddDialog(url, name, 'oauth', grantTo);
      await page.check('#add-form input[name="grant"][value="client_credentials"]');
      await page.fill('#add-form input[name="machineClientId"]', clientId);
    }

    /** Every page the browser opens from here on (a popup is one). */
    function pagesOpened(): { pages: Page[]; stop(): void } {
      const pages: Page[] = [];
      const onPage = (p: Page) => void pages.push(p);
      context.on('page', onPage);
      return { pages, stop: () => void context.off('page', onPage) };
    }

    it('adds a machine to machine oauth server with a client secret: no popup, connected with its tools, the secret gone from the page', async () => {
      machineAs.registerMachineClient('console-m2m', { secret: MACHINE_SECRET });
      const opened = pagesOpened();
      await openMachineDialog(machine.url, 'machine', '', ['helper']);
      await page.click('#add-save');
      await page
        .locator('#add-errors li[data-field="clientId"]', {
          hasText: 'Client ID: the client ID is required for machine to machine',
        })
        .waitFor();
      await page
        .locator('#add-errors li[data-field="clientSecret"]', { hasText: 'Client secret: paste the client secret' })
        .waitFor();
      expect(
        (await system.api.act<{ servers: RedactedMcpServer[] }>('ListMcpServers')).servers.map((s) => s.name),
      ).not.toContain('machine');

      await page.fill('#add-form input[name="machineClientId"]', 'console-m2m');
      await page.fill('#add-form input[name="machineClientSecret"]', MACHINE_SECRET);
      await page.fill('#add-form input[name="scope"]', 'mcp:tools');
      await page.click('#add-save');
      await page.locator('#add-dialog').waitFor({ state: 'hidden' });
      await server('machine').locator('.chip[data-state="ok"]', { hasText: '2 tools' }).waitFor();
      await page.locator('#message', { hasText: 'machine: connected, 2 tools' }).waitFor();
      expect(await server('machine').locator('.chip.era').textContent()).toMatch(/^legacy 2025-\d\d-\d\d$/);
      expect(await server('machine').locator('.oauth-client[data-grant="client_credentials"]').textContent()).toBe(
        'OAuth client ID console-m2m · machine to machine · secret set · scope mcp:tools',
      );
      expect(await server('machine').getByRole('button', { name: 'Authorize' }).count()).toBe(0);
      await server('machine').getByRole('button', { name: 'tools of machine' }).click();
      await server('machine').locator('.tools li', { hasText: 'machine__echo' }).waitFor();
      await agentPage();
      await page.locator('#tool-index', { hasText: 'machine__echo' }).waitFor();
      await room('#/servers');
      // The token came from the token endpoint: nobody signed in and no window opened.
      expect(machineAs.stats.clientCredentialsGrants).toBe(1);
      expect(machineAs.stats.authorizations).toBe(0);
      expect(opened.pages).toEqual([]);
      opened.stop();

      const { servers } = await system.api.act<{ servers: RedactedMcpServer[] }>('ListMcpServers');
      expect(servers.find((s) => s.name === 'machine')?.oauthClient).toEqual({
        clientId: 'console-m2m',
        grant: 'client_credentials',
        hasClientSecret: true,
        hasPrivateKey: false,
        scope: 'mcp:tools',
      });
      expect(await page.locator('#add-form input[name="machineClientSecret"]').inputValue()).toBe('');
      expect(await pageText()).not.toContain(MACHINE_SECRET);
    });

    it('adds machine clients with a private key (shown as "key set (ES256)") and with a refused secret (its error, no Authorize)', async () => {
      const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
      const pemBody = pem
        .split('\n')
        .filter((l) => l !== '' && !l.startsWith('-----'))
        .join('')
        .slice(0, 48);
      machineAs.registerMachineClient('console-jwt', { publicKey, alg: 'ES256' });
      const opened = pagesOpened();
      await openMachineDialog(machine.url, 'signed', 'console-jwt');
      await page.check('#add-form input[name="credential"][value="key"]');
      await page.fill('#add-form textarea[name="privateKey"]', pem);
      // A key the algorithm cannot sign with is named before anything is sent.
      await page.selectOption('#add-form select[name="keyAlg"]', 'RS256');
      await page.click('#add-save');
      await page.locator('#add-errors li[data-field="keyAlg"]', { hasText: 'pick ES256' }).waitFor();
      await page.selectOption('#add-form select[name="keyAlg"]', 'ES256');
      await page.click('#add-save');
      await page.locator('#add-dialog').waitFor({ state: 'hidden' });
      await server('signed').locator('.chip[data-state="ok"]', { hasText: '2 tools' }).waitFor();
      expect(await server('signed').locator('.oauth-client').textContent()).toBe(
        'OAuth client ID console-jwt · machine to machine · key set (ES256)',
      );
      expect(machineAs.stats.clientAuthMethods.at(-1)).toBe('private_key_jwt');
      expect(await page.locator('#add-form textarea[name="privateKey"]').inputValue()).toBe('');

      const wrong = 'm2m-wrong-2b7c9e40-never-in-the-page';
      await openMachineDialog(machine.url, 'refused', 'console-m2m');
      await page.fill('#add-form input[name="machineClientSecret"]', wrong);
      await page.click('#add-save');
      await page.locator('#add-dialog').waitFor({ state: 'hidden' });
      await server('refused').locator('.chip[data-state="error"]', { hasText: 'Not connected' }).waitFor();
      await server('refused')
        .locator('.error-text', {
          hasText: 'refused the OAuth client credentials (invalid_client: wrong client secret)',
        })
        .waitFor();
      await page.locator('#message.error', { hasText: 'refused: saved, but' }).waitFor();
      expect(await server('refused').getByRole('button', { name: 'Authorize' }).count()).toBe(0);
      expect(await server('refused').locator('.oauth-client').textContent()).toBe(
        'OAuth client ID console-m2m · machine to machine · secret set',
      );
      expect(opened.pages).toEqual([]);
      opened.stop();
      const text = await pageText();
      for (const s of [wrong, MACHINE_SECRET, pemBody]) expect(text).not.toContain(s);
    });

    it('shows a call that asks in the approvals view, live; Approve lets the re-sent call run, Deny refuses it', async () => {
      const agent = await page.locator('#agent-select').inputValue();
      const id = await stoppedCall(system, agent, 'browser-run', 'acme__drop_table', { table: 'users' });
      // Counted in the navigation, live, whatever room is open.
      await page.locator('#nav #approval-count', { hasText: '1' }).waitFor();
      await room('#/approvals');
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
      const err = await system.callError(
        agent,
        'browser-run',
        'acme__drop_table',
        { table: 'orders' },
        { approvalId: refused },
      );
      expect(err.code).toBe('approval_refused');
      await page.locator('#approvals-empty').waitFor();
      expect(await pageText()).not.toContain(SECRET);
      await room('#/servers');
    });

    it('shows the permission level of each tool and lets the owner override it; a failed change stays next to its tool', async () => {
      const dialogs: string[] = [];
      page.on('dialog', (d) => {
        dialogs.push(d.message());
        void d.dismiss();
      });
      // acme was expanded above; each tool carries a labelled control.
      await server('acme')
        .locator('.tools li[data-tool="drop_table"][data-permission="always_ask"]:not([data-overridden])')
        .waitFor();
      expect(await permissionOf('acme__drop_table').inputValue()).toBe('');
      expect(await chosen('acme__drop_table').textContent()).toBe('inherited (always ask)');
      expect(await chosen('acme__add').textContent()).toBe('inherited (act)');
      expect(await chosen('acme__echo').textContent()).toBe('inherited (act)');

      await overrideAndCall('acme', 'add', { a: 1, b: 2 }, '3');

      // The network fails under the change: the error is shown inline, the control shows what the
      // registry holds, and the next change clears the error.
      const setPermission = (route: Route) =>
        (route.request().postDataJSON() as { action?: { type?: string } } | null)?.action?.type === 'SetToolPermission'
          ? route.abort()
          : route.continue();
      await page.route('**/v1/actions', setPermission);
      const echo = server('acme').locator('.tools li[data-tool="echo"]');
      try {
        await permissionOf('acme__echo').selectOption('always_ask');
        await echo.locator('.permission-error', { hasText: 'not changed' }).waitFor();
        expect(await permissionOf('acme__echo').inputValue()).toBe('');
        expect(await permissionOf('acme__echo').getAttribute('aria-invalid')).toBe('true');
        // No other action failed meanwhile (a reload's ListAgentTools once did, mid-projection).
        expect(
          await page.locator('#message').getAttribute('class'),
          (await page.locator('#message').textContent()) ?? '',
        ).not.toContain('error');
      } finally {
        // Later tests must not inherit a network that refuses their changes.
        await page.unroute('**/v1/actions', setPermission);
      }
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
      await agentPage();
      await page.locator('#tool-index', { hasText: 'github__get_issue' }).waitFor();
      await room('#/servers');
      await server('github').getByRole('button', { name: 'tools of github' }).click();
      await server('github').locator('.tools li[data-tool="create_issue"][data-permission="always_ask"]').waitFor();
      expect(await chosen('github__create_issue').textContent()).toBe('inherited (always ask)');
      expect(await chosen('github__get_issue').textContent()).toBe('inherited (act)');
      await overrideAndCall('github', 'get_issue', { owner: 'o', repo: 'r', issue_number: 7 }, 'issue 7');

      // A change made elsewhere (here the API) reaches the row live, through mcp-servers-changed.
      const createIssue = (state: string) => server('github').locator(`.tools li[data-tool="create_issue"]${state}`);
      await system.api.act('SetToolPermission', {
        server: 'github',
        tool: 'create_issue',
        permission: 'act',
      });
      await createIssue('[data-permission="act"][data-overridden="true"]').waitFor();
      expect(await chosen('github__create_issue').textContent()).toBe('act');
      expect(await permissionOf('github__create_issue').locator('option[value=""]').textContent()).toBe(
        'inherited (always ask)',
      );
      await system.api.act('SetToolPermission', {
        server: 'github',
        tool: 'create_issue',
        permission: null,
      });
      await createIssue('[data-permission="always_ask"]:not([data-overridden])').waitFor();
    });

    it('says which stored secrets were dropped when a saved server moves to another origin', async () => {
      await openAddDialog(acme.url, 'wander', 'headers');
      await page.fill('#add-form textarea[name="headers"]', `X-Acme-Token: ${SECRET}`);
      await page.click('#add-save');
      await page.locator('#add-dialog').waitFor({ state: 'hidden' });
      await server('wander').locator('.chip[data-state="ok"]').waitFor();
      expect(await page.locator('#message').textContent()).not.toContain('dropped');

      // Saved again at another origin with another header: the stored token does not follow it there.
      await openAddDialog(vendor.url, 'wander', 'headers');
      await page.fill('#add-form textarea[name="headers"]', 'X-Other: plain');
      await page.click('#add-save');
      await page.locator('#add-dialog').waitFor({ state: 'hidden' });
      await page
        .locator('#message.error', {
          hasText:
            'wander: moved to another origin, so its stored secrets were dropped: re-enter the secret header X-Acme-Token',
        })
        .waitFor();
      expect(vendor.stats.headersSeen.get('x-acme-token')).toBeUndefined();
      expect(await pageText()).not.toContain(SECRET);
    });

    it("shows the agent endpoint's URL and client config from the deployment's settings, not a port of its own", async () => {
      const agent = await page.locator('#agent-select').inputValue();
      await room('#/endpoint');
      await page.locator('#endpoint-url', { hasText: ENDPOINT_PUBLIC_URL }).waitFor();
      expect(await page.locator('#endpoint-url').textContent()).toBe(`${ENDPOINT_PUBLIC_URL}/v1/agents/${agent}/mcp`);
      expect(await page.locator('#endpoint-snippet').textContent()).toContain(
        `"url": "${ENDPOINT_PUBLIC_URL}/v1/agents/${agent}/mcp"`,
      );
      expect(await pageText()).not.toContain(':8083');
      // The agent's page shows it too, and one face per server it may use.
      await agentPage();
      await page
        .locator('#agent-endpoint code', { hasText: `${ENDPOINT_PUBLIC_URL}/v1/agents/${agent}/servers/acme/mcp` })
        .waitFor();
    });

    it('Add server grants only the agents ticked, and none when the connect fails', async () => {
      const grantsOf = async (name: string): Promise<string[]> =>
        (
          await system.api.act<{ agents: Array<{ name: string; grants: { mcpServers: string[] } }> }>('ListAgents')
        ).agents.find((a) => a.name === name)?.grants.mcpServers ?? [];
      await room('#/agents');
      await page.fill('#agent-name', 'second');
      await page.click('#agent-create');
      await page.locator('#agent-page[data-agent]:not(.away) h2', { hasText: 'second' }).waitFor();

      // Nothing ticked: connected, and given to nobody (the current agent included).
      await openAddDialog(plain.url, 'plain', 'none');
      await page.click('#add-save');
      await page.locator('#add-dialog').waitFor({ state: 'hidden' });
      await server('plain').locator('.chip[data-state="ok"]').waitFor();
      expect(await grantsOf('second')).not.toContain('plain');
      expect(await grantsOf('helper')).not.toContain('plain');

      // Ticked, but it does not connect: saved, given to nobody, and the page says why.
      const down = `http://127.0.0.1:${await closedPort()}/mcp`;
      await openAddDialog(down, 'offline', 'none', ['second']);
      await page.click('#add-save');
      await page.locator('#add-dialog').waitFor({ state: 'hidden' });
      await server('offline').locator('.chip[data-state="error"]').waitFor();
      await page
        .locator('#message.error', { hasText: 'offline: saved but not connected, so not given to second' })
        .waitFor();
      await server('offline')
        .locator('.error-text', { hasText: '(connection refused): is the server running, and is the port right?' })
        .waitFor();
      expect(await grantsOf('second')).not.toContain('offline');

      // Ticked and connected: given to that agent only.
      await openAddDialog(plain.url, 'plain2', 'none', ['second']);
      await page.click('#add-save');
      await page.locator('#add-dialog').waitFor({ state: 'hidden' });
      await eventually(
        async () => ((await grantsOf('second')).includes('plain2') ? true : undefined),
        PAGE_WAIT_MS,
        'plain2 granted to second',
      );
      expect(await grantsOf('helper')).not.toContain('plain2');
      await page.selectOption('#agent-select', { label: 'helper' });
    });

    it('a server added with "None" that signs in with OAuth says so and offers Authorize, which connects it', async () => {
      await openAddDialog(guarded.url, 'signin', 'none');
      await page.click('#add-save');
      await page.locator('#add-dialog').waitFor({ state: 'hidden' });
      await server('signin').locator('.chip[data-state="auth_required"]').waitFor();
      await server('signin').locator('.error-text', { hasText: 'this server signs in with OAuth' }).waitFor();
      const button = server('signin').getByRole('button', { name: 'Authorize with OAuth' });
      const [popup] = await Promise.all([page.waitForEvent('popup'), button.click()]);
      if (!popup.isClosed()) await popup.waitForEvent('close');
      await server('signin').locator('.chip[data-state="ok"]', { hasText: '2 tools' }).waitFor();
      const { servers } = await system.api.act<{ servers: RedactedMcpServer[] }>('ListMcpServers');
      expect(servers.find((x) => x.name === 'signin')?.auth).toBe('oauth');
    });

    it('walks the rooms: live counts, search and filters, a server page with its failure in words, an agent page, the audit diff; usable at 390 px; no console error or 404', async () => {
      const shot = async (name: string): Promise<void> => {
        if (SHOTS !== undefined)
          await page.screenshot({
            path: join(SHOTS, `${name}.png`),
            fullPage: name.startsWith('phone') ? false : true,
          });
      };
      if (SHOTS !== undefined) mkdirSync(SHOTS, { recursive: true });
      await page.setViewportSize({ width: 1280, height: 860 });
      // A server that answers 404 at a wrong path, and a call waiting for approval: what a person looks for.
      await system.api.act('SetMcpServer', {
        name: 'typo',
        config: { url: acme.url.replace(/\/mcp$/, '/mpc') },
      });
      const agent = await page.locator('#agent-select').inputValue();
      const waiting = await stoppedCall(system, agent, 'walk-run', 'acme__drop_table', { table: 'invoices' });

      await room('#/servers');
      await server('typo')
        .locator('.error-text', { hasText: 'the server answered 404 at /mpc; MCP servers usually serve /mcp' })
        .waitFor();
      // What waits for a person is counted in the navigation: the approval, the servers in trouble.
      await page.locator('#nav #approval-count', { hasText: '1' }).waitFor();
      expect(Number(await page.locator('#nav #server-wait-count').textContent())).toBeGreaterThanOrEqual(2);
      await shot('servers');

      // Search finds a server by one of its tools; the status filter narrows to the failing ones.
      await page.fill('#server-search', 'drop_table');
      await server('acme').waitFor();
      const found = await page
        .locator('#server-list li.server:not(.filtered-out)')
        .evaluateAll((els) => els.map((e) => [e.getAttribute('data-server'), e.getAttribute('data-search') ?? '']));
      expect(found.map(([name]) => name)).toContain('acme');
      for (const [, search] of found) expect(search).toContain('drop_table');
      expect(found.length).toBeLessThan(await page.locator('#server-list li.server').count());
      await page.fill('#server-search', 'no-such-thing');
      await page.locator('#server-list-none:not([hidden])').waitFor();
      await page.fill('#server-search', '');
      await page.selectOption('#server-state', 'error');
      const failing = await page
        .locator('#server-list li.server:not(.filtered-out)')
        .evaluateAll((els) => els.map((e) => e.getAttribute('data-server')));
      expect(failing).toEqual(expect.arrayContaining(['typo', 'offline']));
      expect(failing).not.toContain('acme');
      await page.selectOption('#server-state', '');

      // A server's page, one click from the list: the failure in words, the raw detail on request, its history.
      await server('typo').locator('a.server-link').click();
      await page
        .locator('#server-page:not(.away) .status-summary', { hasText: 'MCP servers usually serve /mcp' })
        .waitFor();
      expect(await page.locator('#server-page .raw-error pre').textContent()).toContain('HTTP 404');
      await page.locator('#server-history li', { hasText: 'SetMcpServer' }).waitFor();
      await room('#/servers/acme');
      await page.locator('#server-page-tools li[data-tool="drop_table"][data-permission="always_ask"]').waitFor();
      await page.fill('#server-tool-search', 'echo');
      expect(await page.locator('#server-page-tools li:not(.filtered-out)').count()).toBe(1);
      await page.fill('#server-tool-search', '');
      await shot('server-page');

      // The agent's page: what it may use, its tools with their levels, its endpoint.
      await agentPage();
      await page
        .locator('#tool-index li[data-tool="acme__drop_table"][data-permission="always_ask"]', {
          hasText: 'always ask',
        })
        .waitFor();
      expect(await page.locator('#agent-grants input[aria-label="acme for agent helper"]').isChecked()).toBe(true);
      await shot('agent-page');

      await room('#/approvals');
      await page.locator(`#approval-list li[data-approval="${waiting}"]`).waitFor();
      await shot('approvals');

      // The audit log's change, field by field.
      await room('#/audit');
      await page.fill('#audit-action', 'SetToolPermission');
      await page.locator('#audit-action').dispatchEvent('change');
      const row = page.locator('#audit-list li.audit table.audit-change tr[data-kind]').first();
      await row.waitFor();
      expect(await row.locator('td.field').textContent()).toBeTruthy();
      await page.fill('#audit-action', '');
      await page.locator('#audit-action').dispatchEvent('change');
      await page.locator('#audit-list li.audit[data-action="SetMcpServer"] table.audit-change').first().waitFor();
      await shot('audit');

      for (const r of ['#/questions', '#/reviews', '#/tasks', '#/activity', '#/signers']) await room(r);
      await room('#/endpoint');
      await shot('endpoint');

      // A phone: the navigation folds behind Menu; nothing is wider than the screen.
      await page.setViewportSize({ width: 390, height: 844 });
      await room('#/servers');
      expect(await page.locator('#nav').isVisible()).toBe(false);
      expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
      await shot('phone-servers');
      await page.click('#nav-toggle');
      await page.locator('#nav').waitFor();
      await shot('phone-nav');
      await page.locator('#nav a[data-room="agents"]').click();
      await page.locator('#agents:not(.away)').waitFor();
      expect(await page.locator('#nav').isVisible()).toBe(false);
      await room('#/servers/acme');
      // Measured once the page's activity tables (wider than a phone) are drawn: they scroll in place.
      await page.locator('#server-page-body table.activity-calls tbody tr').first().waitFor();
      expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
      await shot('phone-server-page');
      await page.setViewportSize({ width: 1280, height: 860 });

      expect(consoleErrors).toEqual([]);
      expect(notFound).toEqual([]);
    });

    it('keeps a server page’s tool search through a live reload of the servers', async () => {
      await page.setViewportSize({ width: 1280, height: 860 });
      await room('#/servers/acme');
      await page.locator('#server-page-tools li[data-tool="drop_table"]').waitFor();
      await page.fill('#server-tool-search', 'echo');
      expect(await page.locator('#server-page-tools li:not(.filtered-out)').count()).toBe(1);
      // Another server changes: the console hears it and draws the open page again.
      await page.evaluate(`document.querySelector('#server-page-tools').dataset.drawn = 'before'`);
      await system.api.act('SetMcpServer', {
        name: 'typo',
        config: { url: acme.url.replace(/\/mcp$/, '/mpd') },
      });
      await page.locator('#server-page-tools:not([data-drawn])').waitFor();
      expect(await page.inputValue('#server-tool-search')).toBe('echo');
      expect(await page.locator('#server-page-tools li:not(.filtered-out)').count()).toBe(1);
      await page.fill('#server-tool-search', '');
      expect(await page.locator('#server-page-tools li.filtered-out').count()).toBe(0);
    });

    it('keeps what is typed in the search while a live reload of the page loads its history', async () => {
      await room('#/servers/acme');
      await page.locator('#server-page-tools li[data-tool="drop_table"]').waitFor();
      await page.fill('#server-tool-search', 'echo');
      expect(await page.locator('#server-page-tools li:not(.filtered-out)').count()).toBe(1);
      // The reload's history read is held: the search is cleared while the page is being drawn.
      let asked!: () => void;
      const historyAsked = new Promise<void>((r) => (asked = r));
      let release!: () => void;
      const released = new Promise<void>((r) => (release = r));
      const holdHistory = async (route: Route) => {
        if (
          (route.request().postDataJSON() as { action?: { type?: string } } | null)?.action?.type !== 'ListAuditEvents'
        )
          return route.continue();
        asked();
        await released;
        return route.continue();
      };
      await page.evaluate(`document.querySelector('#server-page-tools').dataset.drawn = 'before'`);
      await page.route('**/v1/actions', holdHistory);
      try {
        await system.api.act('SetMcpServer', {
          name: 'typo2',
          config: { url: acme.url.replace(/\/mcp$/, '/mpd') },
        });
        await historyAsked;
        await page.fill('#server-tool-search', '');
        release();
        await page.locator('#server-page-tools:not([data-drawn])').waitFor();
      } finally {
        release();
        await page.unroute('**/v1/actions', holdHistory);
      }
      expect(await page.inputValue('#server-tool-search')).toBe('');
      expect(await page.locator('#server-page-tools li.filtered-out').count()).toBe(0);
    });

    it("opens a new agent's page after Create agent only if the person is still where they asked", async () => {
      // The create is held on its way to the registry while the person goes to the servers room.
      let asked!: () => void;
      const createAsked = new Promise<void>((r) => (asked = r));
      let release!: () => void;
      const released = new Promise<void>((r) => (release = r));
      const holdCreate = async (route: Route) => {
        if ((route.request().postDataJSON() as { action?: { type?: string } } | null)?.action?.type !== 'CreateAgent')
          return route.continue();
        asked();
        await released;
        return route.continue();
      };
      await room('#/agents');
      await page.route('**/v1/actions', holdCreate);
      try {
        await page.fill('#agent-name', 'moved-away');
        await page.click('#agent-create');
        await createAsked;
        await room('#/servers');
        release();
        // The lists read again and the header's choice set to the new agent: the console has decided
        // where to go (in the same turn, app.js), and the address and the room stayed.
        await eventually(
          async () =>
            (await page.evaluate<string>(
              `document.querySelector('#agent-select').selectedOptions[0]?.textContent ?? ''`,
            )) === 'moved-away'
              ? true
              : undefined,
          PAGE_WAIT_MS,
          'the new agent chosen in the header',
        );
        expect(await page.locator('main > section[data-room="servers"]:not(.away):not([hidden])').count()).toBe(1);
        expect(await page.evaluate<string>('location.hash')).toBe('#/servers');
      } finally {
        release();
        await page.unroute('**/v1/actions', holdCreate);
      }
      // Still where they asked: the new agent's page opens, as before.
      await room('#/agents');
      await page.fill('#agent-name', 'stayed');
      await page.click('#agent-create');
      await page.locator('#agent-page[data-agent]:not(.away) h2', { hasText: 'stayed' }).waitFor();
      await page.selectOption('#agent-select', { label: 'helper' });
    });

    it('keeps the caret in the search when a live reload draws the page again mid-word', async () => {
      await room('#/servers/acme');
      await page.locator('#server-page-tools li[data-tool="drop_table"]').waitFor();
      await page.fill('#server-tool-search', '');
      await page.keyboard.type('ec');
      await page.evaluate(`document.querySelector('#server-page-tools').dataset.drawn = 'before'`);
      await system.api.act('SetMcpServer', {
        name: 'typo3',
        config: { url: acme.url.replace(/\/mcp$/, '/mpe') },
      });
      await page.locator('#server-page-tools:not([data-drawn])').waitFor();
      // The rest of the word, typed after the page was drawn again (how a fill's keys were lost).
      await page.keyboard.type('ho');
      expect(await page.inputValue('#server-tool-search')).toBe('echo');
      expect(await page.locator('#server-page-tools li:not(.filtered-out)').count()).toBe(1);
      await page.fill('#server-tool-search', '');
    });
  },
);
