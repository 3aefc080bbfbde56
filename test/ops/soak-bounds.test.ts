/**
 * The soak's verdict (test/ops/support/soak-run.ts `soakFailures`), pure: each bound trips on the
 * measures that break it and holds on those of a healthy run on a loaded box. The soak itself,
 * on the real stack, is test/ops/soak.test.ts.
 */
import { createServer, type Server } from 'node:net';
import { describe, expect, it } from 'vitest';
import { WireError } from '@mcpx/contracts';
import { SOAK_BOUNDS, failureOf, soakFailures } from './support/soak-run.js';

const windows = (...p99: number[]) => p99.map((p) => ({ p99: p, calls: 500 }));
const rss = (...growth: number[]) => growth.map((g, i) => ({ instance: `svc-${i}`, growthMiB: g }));

describe('soak bounds', () => {
  it('a healthy run under load passes: p99 moving both ways by 2x, RSS shrinking or growing a little', () => {
    expect(
      soakFailures({ windows: windows(895, 1884, 1001, 1367), rss: rss(-42, 3.4, -1.9, 60), errors: 0 }, SOAK_BOUNDS),
    ).toEqual([]);
    // A spike in the last window alone is load, not drift.
    expect(soakFailures({ windows: windows(300, 250, 280, 2900), rss: rss(0), errors: 0 }, SOAK_BOUNDS)).toEqual([]);
  });

  it('a p99 that rises in every window past both 4x and +2 s fails; past only one of them it does not', () => {
    expect(soakFailures({ windows: windows(500, 900, 1800, 2600), rss: rss(0), errors: 0 }, SOAK_BOUNDS)).toEqual([
      'p99 drift 500 → 2600 ms, rising in every window, past both ×4 and +2000 ms',
    ]);
    expect(soakFailures({ windows: windows(100, 200, 300, 900), rss: rss(0), errors: 0 }, SOAK_BOUNDS)).toEqual([]); // 9x but +800 ms
    expect(soakFailures({ windows: windows(1500, 2000, 3000, 3600), rss: rss(0), errors: 0 }, SOAK_BOUNDS)).toEqual([]); // +2.1 s but 2.4x
  });

  it('RSS growth past the bound, a service without samples, an error and a silent window each fail', () => {
    expect(soakFailures({ windows: windows(500, 500, 500, 500), rss: rss(10, 95.5), errors: 0 }, SOAK_BOUNDS)).toEqual([
      'svc-1 RSS grew 95.5 MiB (bound 64 MiB)',
    ]);
    expect(soakFailures({ windows: windows(500, 500, 500, 500), rss: rss(NaN), errors: 0 }, SOAK_BOUNDS)).toEqual([
      'svc-0 RSS grew NaN MiB (bound 64 MiB)',
    ]);
    expect(soakFailures({ windows: windows(500, 500, 500, 500), rss: rss(0), errors: 1 }, SOAK_BOUNDS)).toEqual([
      '1 errors',
    ]);
    expect(
      soakFailures(
        {
          windows: [
            { p99: 500, calls: 400 },
            { p99: 0, calls: 0 },
            { p99: 500, calls: 400 },
            { p99: 500, calls: 400 },
          ],
          rss: rss(0),
          errors: 0,
        },
        SOAK_BOUNDS,
      ),
    ).toEqual(['window 2 answered no call']);
  });

  it("an action's fetch whose socket its server closed under it is a reset (bounded apart); a refused connection or a typed error is an error", async () => {
    // A server that takes the connection and closes it once the request arrives, as the registry's
    // keep-alive timer did to a socket the soak reused; then the same port with nothing there.
    const server: Server = createServer((socket) => socket.once('data', () => socket.destroy()));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as { port: number };
    const url = `http://127.0.0.1:${port}/v1/actions`;
    const closed = await fetch(url, { method: 'POST', body: '{}' }).catch((err: unknown) => err);
    await new Promise((r) => server.close(r));
    const refused = await fetch(url, { method: 'POST', body: '{}' }).catch((err: unknown) => err);

    const reset = failureOf('RefreshMcpServer', closed);
    expect(reset.kind).toBe('reset');
    expect(reset.text).toMatch(/^RefreshMcpServer: fetch failed: .*(other side closed|ECONNRESET)/);
    const error = failureOf('RefreshMcpServer', refused);
    expect(error.kind).toBe('error');
    expect(error.text).toMatch(/^RefreshMcpServer: fetch failed: ECONNREFUSED .*\(127\.0\.0\.1:\d+\)$/);
    expect(failureOf('call soak-0-1', new WireError('internal', 'boom'))).toEqual({
      kind: 'error',
      text: 'call soak-0-1: internal boom',
    });
  });
});
