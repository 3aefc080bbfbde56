/**
 * `pnpm soak --minutes N` (issue 16, point 6): mixed load on the whole stack as processes (one
 * registry, one projector, two proxies) against two upstreams (modern and legacy) in this
 * process, for N minutes:
 * - calls (several per run, runs ended), from four callers;
 * - discoveries: a server's tools change and it is refreshed;
 * - grants: an agent's grant is revoked and given back (UpdateAgent), its tools follow;
 * - approvals: a destructive tool's call stops for approval, is approved, and runs once.
 * Reports every unexpected outcome (a line `N errors`), p99 per minute and its drift (last minute
 * against the first), and each service's RSS growth from the end of the first minute to the end.
 * Exits non-zero on any error or on growth beyond the bound (MAX_GROWTH_MIB per service).
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { WireError } from '@mcpx/contracts';
import { echoTool, startTestMcpServer, type TestTool } from '../../servers/index.js';
import { percentile, Stack } from '../support/stack.js';

const { values } = parseArgs({ options: { minutes: { type: 'string' }, 'max-growth-mib': { type: 'string' } } });
const MINUTES = Number(values.minutes ?? 2);
const MAX_GROWTH_MIB = Number(values['max-growth-mib'] ?? 96);
if (!(MINUTES > 0)) throw new Error('--minutes N (N > 0)');

const say = (line: string): void => void process.stdout.write(`${line}\n`);

function rssMiB(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m?.[1] === undefined ? NaN : Number(m[1]) / 1024;
}

let dropped = 0;
const dropTool: TestTool = {
  name: 'drop_table',
  description: 'Drops a table (destructive: always asks).',
  inputSchema: { type: 'object', properties: { table: { type: 'string' } }, required: ['table'] },
  annotations: { destructiveHint: true },
  handler: (args) => {
    dropped++;
    return { content: [{ type: 'text', text: `dropped ${String(args['table'])}` }] };
  },
};
const extra = (n: number): TestTool => ({ name: `v${n}`, description: `version ${n}`, inputSchema: { type: 'object' }, handler: () => ({ content: [{ type: 'text', text: String(n) }] }) });

const [modern, legacy] = await Promise.all([startTestMcpServer({ era: 'modern', tools: [echoTool(), dropTool] }), startTestMcpServer({ era: 'legacy', tools: [echoTool()] })]);
const stack = await Stack.start({ proxies: 2, env: { LOG_LEVEL: 'error' } });
const errors: string[] = [];
const samples: Array<{ at: number; ms: number }> = [];
const counts = { calls: 0, runs: 0, discoveries: 0, grants: 0, approvals: 0 };
const fail = (what: string, err: unknown): void => {
  errors.push(`${what}: ${err instanceof WireError ? `${err.code} ${err.message}` : (err as Error).message}`);
};

try {
  await stack.setServer('m', modern.url);
  await stack.setServer('l', legacy.url);
  const agent = await stack.createAgent('soak', ['m', 'l'], 3);
  const granted = await stack.createAgent('grants', ['m'], 2);
  const started = Date.now();
  const end = started + MINUTES * 60_000;
  const rss: Record<string, { start: number; end: number }> = {};
  let baselineTaken = false;
  const baseline = (): void => {
    for (const s of stack.services) rss[s.instance] = { start: rssMiB(s.child.pid), end: NaN };
    baselineTaken = true;
  };

  const callers = Array.from({ length: 4 }, async (_, w) => {
    for (let r = 0; Date.now() < end; r++) {
      const run = `soak-${w}-${r}`;
      counts.runs++;
      for (let c = 0; c < 5; c++) {
        const t0 = Date.now();
        try {
          const server = c % 2 === 0 ? 'm' : 'l';
          const out = await stack.call(agent, run, `${server}__echo`, { text: `${w}.${r}.${c}` });
          if (out.result.text !== `echo: ${w}.${r}.${c}`) errors.push(`call ${run}: wrong answer ${out.result.text ?? ''}`);
          samples.push({ at: t0, ms: Date.now() - t0 });
          counts.calls++;
        } catch (err) {
          fail(`call ${run}`, err);
        }
      }
      await stack.api.act('EndRun', { run }).catch((err: unknown) => fail(`EndRun ${run}`, err));
      if (!baselineTaken && Date.now() - started > Math.min(60_000, (MINUTES * 60_000) / 4)) baseline();
    }
  });

  const discoveries = (async () => {
    for (let n = 1; Date.now() < end; n++) {
      modern.setTools([echoTool(), dropTool, extra(n)]);
      await stack.api.act('RefreshMcpServer', { name: 'm' }).then(
        () => void counts.discoveries++,
        (err: unknown) => fail('RefreshMcpServer', err),
      );
      await new Promise((r) => setTimeout(r, 1_000));
    }
  })();

  const grants = (async () => {
    for (let n = 0; Date.now() < end; n++) {
      const servers = n % 2 === 0 ? [] : ['m'];
      await stack.api.act('UpdateAgent', { agent: granted, definition: { mcpServers: servers } }).then(
        () => void counts.grants++,
        (err: unknown) => fail('UpdateAgent', err),
      );
      await new Promise((r) => setTimeout(r, 1_500));
    }
  })();

  const approvals = (async () => {
    for (let n = 0; Date.now() < end; n++) {
      const run = `approve-${n}`;
      try {
        const stopped = await stack.callError(agent, run, 'm__drop_table', { table: `t${n}` });
        if (stopped.code !== 'approval_required') throw stopped;
        const approvalId = stopped.details.approvalId as string;
        await stack.api.act('ApproveToolCall', { approvalId });
        const before = dropped;
        const out = await stack.call(agent, run, 'm__drop_table', { table: `t${n}` }, { approvalId });
        if (out.result.text !== `dropped t${n}` || dropped !== before + 1) errors.push(`approval ${n}: ran ${dropped - before} times`);
        counts.approvals++;
      } catch (err) {
        fail(`approval ${n}`, err);
      }
      await new Promise((r) => setTimeout(r, 2_000));
    }
  })();

  const progress = setInterval(() => say(`soak: ${Math.round((Date.now() - started) / 1000)} s, ${counts.calls} calls, ${errors.length} errors`), 30_000);
  await Promise.all([...callers, discoveries, grants, approvals]);
  clearInterval(progress);
  if (!baselineTaken) baseline();
  for (const s of stack.services) {
    const r = rss[s.instance];
    if (r !== undefined) r.end = rssMiB(s.child.pid);
    if (!s.alive()) errors.push(`${s.instance} exited`);
  }

  // p99 per minute (or per quarter of a shorter soak), and the drift of the last against the first.
  const windowMs = Math.min(60_000, (MINUTES * 60_000) / 4);
  const windows: number[] = [];
  for (let t = started; t < end; t += windowMs) windows.push(percentile(samples.filter((s) => s.at >= t && s.at < t + windowMs).map((s) => s.ms), 99));
  const first = windows[0] ?? 0;
  const last = windows[windows.length - 1] ?? 0;
  say(`soak: ${MINUTES} min, ${counts.calls} calls in ${counts.runs} runs, ${counts.discoveries} discoveries, ${counts.grants} grant changes, ${counts.approvals} approvals`);
  say(`soak: p99 per ${windowMs / 1000} s: ${windows.map((w) => `${w} ms`).join(', ')}; drift ${last - first >= 0 ? '+' : ''}${last - first} ms (${first > 0 ? ((last / first - 1) * 100).toFixed(0) : '?'} %)`);
  let grew = false;
  for (const [instance, r] of Object.entries(rss)) {
    const growth = r.end - r.start;
    if (growth > MAX_GROWTH_MIB) grew = true;
    say(`soak: ${instance} RSS ${r.start.toFixed(0)} → ${r.end.toFixed(0)} MiB (${growth >= 0 ? '+' : ''}${growth.toFixed(1)} MiB; bound ${MAX_GROWTH_MIB} MiB)`);
  }
  for (const e of errors.slice(0, 20)) say(`soak error: ${e}`);
  say(`${errors.length} errors`);
  process.exitCode = errors.length > 0 || grew ? 1 : 0;
} finally {
  await stack.stop();
  await Promise.all([modern.close(), legacy.close()]);
}
process.exit(process.exitCode ?? 0);
