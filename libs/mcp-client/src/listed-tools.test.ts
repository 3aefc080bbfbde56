import { describe, expect, it } from 'vitest';
import { ListedTools, type ToolsWithHints } from './listed-tools.js';

/** A listing that counts how often it ran and answers what it is told. */
function lister(result: () => ToolsWithHints): { list: () => Promise<ToolsWithHints>; runs: () => number } {
  let runs = 0;
  return {
    list: () => {
      runs++;
      return Promise.resolve(result());
    },
    runs: () => runs,
  };
}

const tools = (name: string, ttlMs?: number): ToolsWithHints => ({
  tools: [{ name, inputSchema: { type: 'object' } }],
  ...(ttlMs !== undefined ? { ttlMs } : {}),
});
const byTtl = (maxAgeMs: number) => (listed: ToolsWithHints) => Math.min(listed.ttlMs ?? 0, maxAgeMs);

describe('a connection’s listed tools', () => {
  it('reuses a listing within its ttlMs (held to the maximum age), and lists again after it', async () => {
    const listed = new ListedTools();
    const l = lister(() => tools('a', 10_000));
    expect(await listed.current(byTtl(5_000), l.list, 1_000)).toMatchObject({
      reused: false,
      listedAt: 1_000,
      ttlMs: 10_000,
    });
    expect(await listed.current(byTtl(5_000), l.list, 5_999)).toMatchObject({ reused: true, listedAt: 1_000 });
    expect(l.runs()).toBe(1);
    // The hint says 10 s; the caller's maximum age is 5 s.
    expect(await listed.current(byTtl(5_000), l.list, 6_000)).toMatchObject({ reused: false, listedAt: 6_000 });
    expect(l.runs()).toBe(2);
  });

  it('a list without ttlMs is stale at once: every current() lists', async () => {
    const listed = new ListedTools();
    const l = lister(() => tools('a'));
    await listed.current(byTtl(30_000), l.list, 0);
    await listed.current(byTtl(30_000), l.list, 0);
    expect(l.runs()).toBe(2);
  });

  it('a change heard makes the last listing stale, whatever its age', async () => {
    const listed = new ListedTools();
    let name = 'a';
    const l = lister(() => tools(name, 60_000));
    await listed.current(byTtl(60_000), l.list, 0);
    name = 'b';
    listed.heard();
    expect((await listed.current(byTtl(60_000), l.list, 1)).tools[0]?.name).toBe('b');
    expect((await listed.current(byTtl(60_000), l.list, 2)).reused).toBe(true);
  });

  it('a tracked listing (a quiet discovery) is the one current() reuses, and concurrent callers share one listing', async () => {
    const listed = new ListedTools();
    const l = lister(() => tools('a', 60_000));
    await listed.track(l.list, true, 0);
    expect(await listed.current(byTtl(60_000), l.list, 10)).toMatchObject({ reused: true, listedAt: 0 });
    listed.heard();
    const [x, y] = await Promise.all([
      listed.current(byTtl(60_000), l.list, 20),
      listed.current(byTtl(60_000), l.list, 20),
    ]);
    expect(x.tools).toEqual(y.tools);
    expect(l.runs()).toBe(2);
  });

  it('a listing that started before a change was heard is not shared after it', async () => {
    const listed = new ListedTools();
    let release!: () => void;
    const slow = new Promise<void>((r) => (release = r));
    let calls = 0;
    const list = async (): Promise<ToolsWithHints> => {
      calls++;
      if (calls === 1) await slow;
      return tools(calls === 1 ? 'old' : 'new', 60_000);
    };
    const first = listed.track(list, true, 0);
    listed.heard();
    const second = listed.current(byTtl(60_000), list, 1);
    release();
    await first;
    expect((await second).tools[0]?.name).toBe('new');
    // The older listing, finishing last, does not replace the newer one.
    expect((await listed.current(byTtl(60_000), list, 2)).tools[0]?.name).toBe('new');
  });

  it('a notification stream that opened or ended makes the last listing stale; one under way is still shared', async () => {
    const listed = new ListedTools();
    const l = lister(() => tools('a', 60_000));
    await listed.current(byTtl(60_000), l.list, 0);
    listed.streamChanged();
    expect(await listed.current(byTtl(60_000), l.list, 1)).toMatchObject({ reused: false, listedAt: 1 });
    expect(await listed.current(byTtl(60_000), l.list, 2)).toMatchObject({ reused: true, listedAt: 1 });
    const underWay = listed.track(l.list, true, 3);
    listed.streamChanged();
    const shared = listed.current(byTtl(60_000), l.list, 4);
    await underWay;
    expect(await shared).toMatchObject({ reused: false, listedAt: 3 });
    expect(l.runs()).toBe(3);
    // Asked for before the stream changed: not reused later.
    expect(await listed.current(byTtl(60_000), l.list, 5)).toMatchObject({ reused: false, listedAt: 5 });
  });

  it('a failed listing keeps nothing', async () => {
    const listed = new ListedTools();
    await expect(listed.current(byTtl(60_000), () => Promise.reject(new Error('down')), 0)).rejects.toThrow('down');
    const l = lister(() => tools('a', 60_000));
    expect(await listed.current(byTtl(60_000), l.list, 1)).toMatchObject({ reused: false });
  });
});
