import { rmSync } from 'node:fs';
import { type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTasksUpstream, type TasksUpstream } from '../servers/tasks-upstream.js';
import { ProxySystem } from '../support/proxy-system.js';
import { HAS_CHROMIUM } from '../support/chromium.js';
import { launchConsoleBrowser, signInWithKey } from '../support/fixtures/console-browser.js';

/** A browser on a busy machine is slow to draw: each wait is bounded at a minute. */
const PAGE_WAIT_MS = 60_000;

/**
 * The console's tasks room in a real Chromium against the real system (registry, projector and
 * proxy on NATS, Postgres and Redis) and a modern server speaking the 2026-07-28 tasks extension:
 * tasks started by a runtime over NATS are listed per agent with their state and status; the
 * owner cancels a running one from the page (the server is asked, the audit log names the owner),
 * and a finished one has no Cancel button.
 */
describe.skipIf(!HAS_CHROMIUM)('the console tasks room in a real browser', { timeout: 180_000 }, () => {
  let system: ProxySystem;
  let modern: TasksUpstream;
  let userDataDir: string;
  let context: BrowserContext;
  let page: Page;
  const consoleErrors: string[] = [];

  beforeAll(async () => {
    [system, modern] = await Promise.all([
      ProxySystem.start({ env: { TASK_LEASE_MS: '1500', TASK_POLL_MIN_MS: '100' } }),
      startTasksUpstream({ durationMs: 1_500, pollIntervalMs: 250 }),
    ]);
    await system.setServer('modern', modern.url);
    await system.createAgent('exporter', ['modern'], 3);
    await system.createAgent('idle', ['modern'], 3);
    ({ userDataDir, context, page } = await launchConsoleBrowser('mcpx-console-tasks-', PAGE_WAIT_MS));
    page.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(m.text());
    });
    page.on('pageerror', (e) => consoleErrors.push(e.message));
    await signInWithKey(page, system.api.apiUrl, system.api.key, system.account);
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
    await system?.stop();
    await modern?.close();
  });

  const row = (id: string, state?: string) =>
    page.locator(`.task-list tr[data-task="${id}"]${state === undefined ? '' : `[data-state="${state}"]`}`);

  it('lists running and finished tasks per agent; the owner cancels a running one', async () => {
    const running = (
      await system.call('exporter', 'tasks-room-1', 'modern__never-ends', {}, { task: true, timeoutMs: 500 })
    ).result.task!.id;
    const finishing = (
      await system.call(
        'exporter',
        'tasks-room-2',
        'modern__long-export',
        { format: 'csv' },
        { task: true, timeoutMs: 300 },
      )
    ).result.task!.id;
    await page.evaluate(`location.hash = '#/tasks'`);
    await page.locator('#tasks:not(.away)').waitFor();
    // The finished task shows as completed (the room reads the list again while shown), with no Cancel.
    await row(finishing, 'completed').waitFor();
    expect(await row(finishing).getByRole('button', { name: 'Cancel' }).count()).toBe(0);
    await row(running, 'working').waitFor();
    expect(await row(running).textContent()).toContain('modern__never-ends');
    expect(await row(running).textContent()).toContain('exporter');
    // Another agent's filter shows neither.
    await page.selectOption('.tasks select[name="agent"]', { label: 'idle' });
    await row(running).waitFor({ state: 'detached' });
    await page.selectOption('.tasks select[name="agent"]', { label: 'exporter' });
    await row(running, 'working').waitFor();

    const cancels = modern.stats.cancels;
    await row(running).getByRole('button', { name: 'Cancel' }).click();
    await row(running, 'cancelled').waitFor();
    expect(modern.stats.cancels).toBe(cancels + 1);
    const { events } = await system.api.act<{ events: Array<{ action: string; signer: string }> }>('ListAuditEvents', {
      action: 'CancelTask',
      target: running,
    });
    expect(events).toEqual([expect.objectContaining({ action: 'CancelTask', signer: system.account })]);
    expect(consoleErrors).toEqual([]);
  });
});
