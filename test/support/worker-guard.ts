import { afterAll } from 'vitest';

/**
 * Run before every test file (vitest `setupFiles`). A worker runs its files one after another in
 * one process, so a file that leaves the clock faked (fake timers not put back, or a spy on
 * `setTimeout` restored after them, which puts the fake back) stalls every later file of its
 * worker: their timeouts and waits never fire. The worker's real timers are kept from its first
 * file; a file that ends with others is failed by name, and the real ones are put back.
 */
const REAL = Symbol.for('mcpx.test.realTimers');
type Timers = Pick<typeof globalThis, 'setTimeout' | 'clearTimeout' | 'setInterval' | 'clearInterval' | 'setImmediate'>;
const held = globalThis as unknown as Record<symbol, Timers | undefined>;
const real: Timers = (held[REAL] ??= {
  setTimeout: globalThis.setTimeout,
  clearTimeout: globalThis.clearTimeout,
  setInterval: globalThis.setInterval,
  clearInterval: globalThis.clearInterval,
  setImmediate: globalThis.setImmediate,
});

afterAll(() => {
  const changed = (Object.keys(real) as Array<keyof Timers>).filter((k) => globalThis[k] !== real[k]);
  if (changed.length === 0) return;
  Object.assign(globalThis, real);
  throw new Error(`this file left ${changed.join(', ')} replaced (fake timers or a spy not put back)`);
});
