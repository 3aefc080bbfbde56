import { rmSync } from 'node:fs';
import { type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { echoTool, errorTool, startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { ProxySystem } from '../support/proxy-system.js';
import { eventually } from '../support/system.js';
import { HAS_CHROMIUM } from '../support/chromium.js';
import { launchConsoleBrowser, signInWithKey } from '../support/fixtures/console-browser.js';

const PAGE_WAIT_MS = 60_000;
const CANARY = 'canary-31b9-argument';

/** The activity view (console/public/activity.js) mounted in the real console page, in Chromium, against the real system. */
describe.skipIf(!HAS_CHROMIUM)('the console activity view in a real browser', { timeout: 180_000 }, () => {
  let system: ProxySystem;
  let upstream: TestMcpServer;
  let userDataDir: string;
  let context: BrowserContext;
  let page: Page;
  const errors: string[] = [];

  beforeAll(async () => {
    [system, upstream] = await Promise.all([
      ProxySystem.start({ env: { ACTIVITY_FLUSH_MS: '50' } }),
      startTestMcpServer({ era: 'modern', tools: [echoTool(), errorTool()] }),
    ]);
    await system.setServer('demo', upstream.url);
    await system.createAgent('helper', ['demo'], 2);
    await system.call('helper', 'r1', 'demo__echo', { text: CANARY });
    await system.call('helper', 'r1', 'demo__echo', { text: 'two' });
    await eventually(
      async () => ((await system.api.act<{ calls: unknown[] }>('ListCalls')).calls.length === 2 ? true : undefined),
      15_000,
      'two calls recorded',
    );
    ({ userDataDir, context, page } = await launchConsoleBrowser('mcpx-activity-', PAGE_WAIT_MS));
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => {
      // A failed resource is reported below with its URL (the console's own 404s are not this view's).
      if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) errors.push(m.text());
    });
    page.on('response', (r) => {
      if (r.status() >= 400 && !r.url().endsWith('/favicon.ico')) errors.push(`${r.status()} ${r.url()}`);
    });
    await signInWithKey(page, system.api.apiUrl, system.api.key, system.account);
  });

  afterAll(async () => {
    await context?.close();
    if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
    await system?.stop();
    await upstream?.close();
  });

  const rows = () => page.locator('#activity-root .activity-calls tbody tr');

  it('shows the figures and the calls, follows new calls live, filters failed ones, and unmounts', async () => {
    // Mounted as the console mounts it: the page's own signed-action function.
    await page.evaluate(`(async () => {
      const root = document.createElement('div');
      root.id = 'activity-root';
      document.body.append(root);
      const { act } = await import('/console/api.js');
      const { mountActivity } = await import('/console/activity.js');
      window.activityView = await mountActivity(root, { act });
    })()`);
    await page.locator('#activity-root .activity-figures tr[data-server="demo"]').waitFor();
    expect(await page.locator('#activity-root .activity-figures tr[data-server="demo"] td').first().textContent()).toBe(
      '2',
    );
    await eventually(async () => ((await rows().count()) === 2 ? true : undefined), PAGE_WAIT_MS, 'two rows');
    expect(await rows().first().textContent()).toContain('demo__echo');
    expect(await rows().first().textContent()).toContain('helper');
    // Live: a failing call appears on its own, on top.
    await system.callError('helper', 'r2', 'demo__fail', {});
    await page.locator('#activity-root .activity-calls tbody tr[data-outcome="error"]').waitFor();
    expect(await rows().first().getAttribute('data-outcome')).toBe('error');
    expect(await rows().first().textContent()).toContain('server_error');
    // Failed only.
    await page.check('#activity-root input[name="failed"]');
    await eventually(async () => ((await rows().count()) === 1 ? true : undefined), PAGE_WAIT_MS, 'one failed row');
    // Never an argument in the page.
    expect(await page.content()).not.toContain(CANARY);
    await page.evaluate('window.activityView.unmount()');
    expect(await page.locator('#activity-root *').count()).toBe(0);
    expect(errors).toEqual([]);
  });
});
