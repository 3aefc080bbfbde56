import { describe, expect, it } from 'vitest';
import { defaultTools, echoTool } from '../../../../test/servers/index.js';
import { clientHarness } from './harness.js';

const { server, connect } = clientHarness();

/** Long enough that age alone never makes a listing stale within a test. */
const MAX_AGE_MS = 60_000;

/**
 * A fetch that holds back a session's GET event streams until `release()` (a stream the client
 * opens late), notes each one that opened, and can `cut()` the open ones (a stream that broke).
 */
function streamGate(): { fetch: typeof fetch; release(): void; opened(): number; cut(): void } {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let opened = 0;
  const cuts = new Set<() => void>();
  const gated: typeof fetch = async (input, init) => {
    if ((init?.method ?? 'GET') !== 'GET') return await fetch(input, init);
    await released;
    const response = await fetch(input, init);
    if (!response.ok || response.body === null) return response;
    opened++;
    const reader = response.body.getReader();
    let cut!: () => void;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        cut = () => {
          controller.error(new TypeError('terminated'));
          void reader.cancel().catch(() => {});
        };
        cuts.add(cut);
      },
      async pull(controller) {
        const { done, value } = await reader.read();
        if (done) controller.close();
        else controller.enqueue(value);
      },
      cancel: async (reason) => {
        cuts.delete(cut);
        await reader.cancel(reason);
      },
    });
    return new Response(body, { status: response.status, headers: response.headers });
  };
  return {
    fetch: gated,
    release,
    opened: () => opened,
    cut: () => {
      for (const cut of cuts) cut();
      cuts.clear();
    },
  };
}

async function until(condition: () => boolean, ms = 5_000): Promise<void> {
  const endsAt = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > endsAt) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * A legacy (2025-11-25) Streamable HTTP server sends its `notifications/tools/list_changed` on the
 * session's GET stream only, and drops it while none is open: a listing stands for later callers
 * only while that stream is open, and only one asked for since it opened.
 */
describe('a legacy session’s listing and its notification stream', () => {
  it('is not reused while the stream is not open yet, nor when it was asked for before it opened', async () => {
    const s = await server({ era: 'legacy' });
    const gate = streamGate();
    const c = await connect({ url: s.url, fetch: gate.fetch });
    await c.listTools();
    const before = s.stats.listCalls;
    // A change now reaches nobody: the session has no stream to send it on.
    s.setTools([...defaultTools(), { ...echoTool(), name: 'echo2' }]);
    const now = await c.currentTools({ maxAgeMs: MAX_AGE_MS });
    expect(now).toMatchObject({ reused: false });
    expect(now.tools.map((t) => t.name)).toContain('echo2');
    expect(s.stats.listCalls).toBe(before + 1);

    gate.release();
    await until(() => gate.opened() === 1);
    // Asked for while no stream was open: listed again once, then reused.
    expect(await c.currentTools({ maxAgeMs: MAX_AGE_MS })).toMatchObject({ reused: false });
    expect(await c.currentTools({ maxAgeMs: MAX_AGE_MS })).toMatchObject({ reused: true });
    expect(s.stats.listCalls).toBe(before + 2);
  });

  it('is not reused once the stream broke, until a listing is asked for on the stream opened again', async () => {
    const s = await server({ era: 'legacy' });
    const gate = streamGate();
    gate.release();
    const c = await connect({ url: s.url, fetch: gate.fetch });
    await until(() => gate.opened() === 1);
    await c.currentTools({ maxAgeMs: MAX_AGE_MS });
    expect(await c.currentTools({ maxAgeMs: MAX_AGE_MS })).toMatchObject({ reused: true });

    gate.cut();
    // Once the client has seen the break, and before it opens the stream again (1 s later), a
    // change would go unheard: what was listed is not reused.
    let reused = true;
    for (const endsAt = Date.now() + 900; reused && Date.now() < endsAt;) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      reused = (await c.currentTools({ maxAgeMs: MAX_AGE_MS })).reused;
    }
    expect(reused).toBe(false);
    expect(gate.opened()).toBe(1);
    await until(() => gate.opened() === 2);
    const before = s.stats.listCalls;
    expect(await c.currentTools({ maxAgeMs: MAX_AGE_MS })).toMatchObject({ reused: false });
    expect(await c.currentTools({ maxAgeMs: MAX_AGE_MS })).toMatchObject({ reused: true });
    expect(s.stats.listCalls).toBe(before + 1);
  });
});
