import { rmSync } from 'node:fs';
import { type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InputMcpServer } from '../servers/input-mcp-server.js';
import type { ProxySystem } from '../support/proxy-system.js';
import { eventually } from '../support/system.js';
import { askedInput, startInputSystem, textOf } from './input-system.js';
import { HAS_CHROMIUM, sayIfNoChromium } from '../support/chromium.js';
import { launchConsoleBrowser, signInWithKey } from '../support/fixtures/console-browser.js';

sayIfNoChromium('inputs-browser: skipped');

/**
 * The console's input view in a real Chromium against the real system and a real SDK v2 server
 * whose tools ask mid-call: the form is drawn from the requested (restricted) schema, a person
 * fills it in and submits, and the waiting call goes on; a declined question; a URL question opens
 * its URL for the person and is marked done.
 */
describe.skipIf(!HAS_CHROMIUM)(
  `the console answers a server's questions${HAS_CHROMIUM ? '' : ' (skipped: no Chromium)'}`,
  () => {
    let system: ProxySystem;
    let upstream: InputMcpServer;
    let userDataDir: string;
    let context: BrowserContext;
    let page: Page;

    beforeAll(async () => {
      ({ system, upstream } = await startInputSystem());
      ({ userDataDir, context, page } = await launchConsoleBrowser('mcpx-inputs-', 20_000));
      await signInWithKey(page, system.api.apiUrl, system.api.key, system.account);
      await page.locator('body[data-live="true"]').waitFor();
      // The console shows one room at a time: the questions waiting for a person.
      await page.evaluate("location.hash = '#/questions'");
    });

    afterAll(async () => {
      await context?.close();
      if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
      await system?.stop();
      await upstream?.close();
    });

    const item = (id: string) => page.locator(`#input-list li[data-input="${id}"]`);
    const waitFor = (run: string, tool: string, args: Record<string, unknown>) =>
      system.client.callAwaitingInput(
        { account: system.account, agent: system.agentId('ops-agent'), run, tool, arguments: args },
        { waitMs: 120_000, pollMs: 1_000 },
      );

    it('"Deploy to prod?" appears with its form; a person ticks it and submits, and the waiting call finishes', async () => {
      const waiting = waitFor('br-1', 'ops__deploy', { env: 'prod' });
      const row = page.locator('#input-list li.input-request', { hasText: 'Deploy to prod?' });
      await row.waitFor();
      await row.getByLabel('Confirm deployment').check();
      await row.getByRole('button', { name: 'Submit' }).click();
      await row.waitFor({ state: 'detached' });
      expect(textOf((await waiting).result)).toBe('Deployed to prod');
      expect(await page.locator('#message').getAttribute('class')).not.toContain('error');
    });

    it('draws every restricted kind (email, bounded integer, boolean, single- and multi-select), and the browser and the registry both check them', async () => {
      const asked = await askedInput(system.call('ops-agent', 'br-2', 'ops__profile', {}));
      const row = item(asked.inputRequestId);
      await row.waitFor();
      expect(await row.getByLabel('Email').getAttribute('type')).toBe('email');
      const seats = row.getByLabel('Seats');
      expect([
        await seats.getAttribute('type'),
        await seats.getAttribute('min'),
        await seats.getAttribute('max'),
        await seats.getAttribute('step'),
      ]).toEqual(['number', '1', '10', '1']);
      expect(await row.getByLabel('Administrator (optional)').getAttribute('type')).toBe('checkbox');
      expect(await row.locator('select option').allTextContents()).toEqual(['Free', 'Team']);
      // The browser refuses an out-of-bounds value before anything is sent.
      await row.getByLabel('Email').fill('ops@example.com');
      await seats.fill('11');
      await row.getByRole('button', { name: 'Submit' }).click();
      expect(await seats.evaluate((e: { validity: { rangeOverflow: boolean } }) => e.validity.rangeOverflow)).toBe(
        true,
      );
      expect(
        (await system.api.act<{ inputRequests: Array<{ id: string }> }>('ListInputRequests', {})).inputRequests.map(
          (r) => r.id,
        ),
      ).toContain(asked.inputRequestId);

      await seats.fill('3');
      await row.getByLabel('Administrator (optional)').check();
      await row.locator('select').selectOption('team');
      await row.getByLabel('Audit log').check();
      await row.getByRole('button', { name: 'Submit' }).click();
      await row.waitFor({ state: 'detached' });
      const done = await system.call('ops-agent', 'br-2', 'ops__profile', {}, { inputRequestId: asked.inputRequestId });
      expect(JSON.parse(textOf(done.result).replace(/^profile /, ''))).toEqual({
        email: 'ops@example.com',
        seats: 3,
        admin: true,
        plan: 'team',
        features: ['audit'],
      });
    });

    it('a declined question is declined; a URL question opens its URL for the person and is marked done', async () => {
      const declined = await askedInput(system.call('ops-agent', 'br-3', 'ops__deploy', { env: 'staging' }));
      await item(declined.inputRequestId).getByRole('button', { name: 'Decline' }).click();
      await item(declined.inputRequestId).waitFor({ state: 'detached' });
      const err = await system
        .call('ops-agent', 'br-3', 'ops__deploy', { env: 'staging' }, { inputRequestId: declined.inputRequestId })
        .catch((e: Error) => e);
      expect(String((err as Error).message)).toContain('cancelled by the operator');

      const waiting = waitFor('br-4', 'ops__sign_in', {});
      const row = page.locator('#input-list li.input-request', { hasText: 'Sign in to Example to continue' });
      await row.waitFor();
      const link = row.getByRole('link', { name: 'Open auth.example.com' });
      expect([
        await link.getAttribute('href'),
        await link.getAttribute('target'),
        await link.getAttribute('rel'),
      ]).toEqual(['https://auth.example.com/login?flow=mcpx', '_blank', 'noopener noreferrer']);
      await row.getByRole('button', { name: 'Done' }).click();
      expect(textOf((await waiting).result)).toBe('Signed in');
      await eventually(
        async () => ((await row.count()) === 0 ? true : undefined),
        10_000,
        'the answered question to leave the list',
      );
      expect(upstream.stats.calls).toBeGreaterThan(0);
    });
  },
);
