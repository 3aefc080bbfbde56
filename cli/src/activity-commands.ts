// `mcpx activity`: what agents did, from the call log (ListCalls; docs/activity.md), and with
// `--figures` each server's calls, error rate and p50/p95 over the last hour and 24 hours
// (GetCallFigures). Metadata only: the log never holds an argument or a result.
import type { CallFigures, CallView, ServerCallFigures } from '@mcpx/contracts';
import { UsageError, flag, type ParsedArgs, type Print } from './args.js';
import { readKey, act, type CliEnv } from './client.js';
import { terminalText } from './terminal-text.js';

/** `activity [--agent A] [--server S] [--tool T] [--failed | --outcome O] [--since ISO] [--until ISO] [--limit N] [--cursor C] [--figures]`. */
export async function activity(env: CliEnv, args: ParsedArgs, print: Print): Promise<void> {
  const key = await readKey(env.keyFile);
  if (flag(args, 'figures') !== undefined) {
    const server = flag(args, 'server');
    const res = await act(env, key, 'GetCallFigures', { ...(server !== undefined ? { server } : {}) });
    print(res, () => figuresText(res.servers));
    return;
  }
  const limit = flag(args, 'limit');
  const n = limit === undefined ? undefined : Number(limit);
  if (n !== undefined && (!Number.isInteger(n) || n < 1)) throw new UsageError('--limit is a positive whole number');
  const failed = flag(args, 'failed') !== undefined;
  const outcome = flag(args, 'outcome');
  if (failed && outcome !== undefined) throw new UsageError('--failed is --outcome failed: give one of them');
  const filters: Record<string, unknown> = {};
  for (const f of ['agent', 'server', 'tool', 'since', 'until', 'cursor'] as const) {
    const v = flag(args, f);
    if (v !== undefined) filters[f] = v;
  }
  if (failed) filters.outcome = 'failed';
  else if (outcome !== undefined) filters.outcome = outcome;
  const res = await act(env, key, 'ListCalls', { ...(n !== undefined ? { limit: n } : {}), ...filters });
  print(res, () => {
    if (res.calls.length === 0) return 'no calls recorded';
    const lines = res.calls.map(callLine);
    if (res.nextCursor !== undefined) lines.push(`older: mcpx activity --cursor ${res.nextCursor}${again(filters)}`);
    return lines.join('\n');
  });
}

/** `2026-12-06T05:10:00.123Z  ok                  12 ms  alpha  demo__echo  run run-1`. */
function callLine(c: CallView): string {
  const who = c.agent.name ?? c.agent.id;
  const extra = [
    c.era,
    c.approvalId !== undefined ? `approval ${c.approvalId}` : undefined,
    c.inputRequestId !== undefined ? `input ${c.inputRequestId}` : undefined,
    c.taskId !== undefined ? `task ${c.taskId}` : undefined,
  ]
    .filter((x) => x !== undefined)
    .join(', ');
  return terminalText(
    `${c.at}  ${c.code.padEnd(18)}  ${`${c.durationMs} ms`.padStart(8)}  ${who}  ${c.tool}  run ${c.run}${extra !== '' ? `  (${extra})` : ''}`,
  );
}

/** The filters of this page, to ask for the next one with the same. */
function again(filters: Record<string, unknown>): string {
  return Object.entries(filters)
    .filter(([k]) => k !== 'cursor')
    .map(([k, v]) => (k === 'outcome' && v === 'failed' ? ' --failed' : ` --${k} ${String(v)}`))
    .join('');
}

function window(f: CallFigures): string {
  const pct = `${(f.errorRate * 100).toFixed(f.errorRate === 0 || f.errorRate === 1 ? 0 : 1)}%`;
  const ms = (v: number | null): string => (v === null ? '-' : `${v} ms`);
  return `${f.calls} calls, ${pct} failed, p50 ${ms(f.p50Ms)}, p95 ${ms(f.p95Ms)}`;
}

function figuresText(servers: ServerCallFigures[]): string {
  if (servers.length === 0) return 'no calls in the last 24 hours';
  return servers
    .map((s) => terminalText(`${s.server}\n  last hour: ${window(s.lastHour)}\n  last 24 h: ${window(s.lastDay)}`))
    .join('\n');
}
