import type { ToolChangeView } from '@mcpx/contracts';
import { displayText, type SchemaChange } from '@mcpx/domain';
import { UsageError, flag, oneOfFlag, need, type ParsedArgs, type Print } from './args.js';
import { act, readKey, type CliEnv } from './client.js';

// A reviewer sees every invisible or direction-changing character as <U+XXXX> (the domain's rule).
const visible = displayText;

function json(v: unknown): string {
  return v === undefined ? '(none)' : visible(JSON.stringify(v));
}

function schemaLine(c: SchemaChange): string {
  const what = c.aspect === 'keyword' ? (c.keyword ?? 'keyword') : c.aspect;
  const at = c.path === '' ? '(root)' : c.path;
  if (c.kind === 'added') return `    + ${at} ${what}${c.after !== undefined ? ` ${json(c.after)}` : ''}`;
  if (c.kind === 'removed') return `    - ${at} ${what}${c.before !== undefined ? ` ${json(c.before)}` : ''}`;
  return `    ~ ${at} ${what}: ${json(c.before)} → ${json(c.after)}`;
}

/**
 * The three CIDs of a held change, each with its role: the held contract (what accept and reject
 * name), the accepted one agents have now, the tool document agents get once it is accepted.
 */
export function cidLines(c: Pick<ToolChangeView, 'cid' | 'previousCid' | 'documentCid' | 'kind'>): string[] {
  const lines = [`  held contract:     ${c.cid}  (the change; accept or reject names it)`];
  lines.push(
    c.previousCid !== undefined
      ? `  accepted contract: ${c.previousCid}  (what agents have now)`
      : `  accepted contract: none  (${c.kind === 'new' ? 'a new tool' : 'nothing accepted yet'})`,
  );
  if (c.documentCid !== undefined)
    lines.push(`  tool document:     ${c.documentCid}  (what agents get once the change is accepted)`);
  return lines;
}

/** A change as a reviewer reads it: the verdict, warnings, the description as a word diff ([-removed-] {+added+}), schema and annotation changes. */
export function changeText(c: ToolChangeView): string {
  const effect = c.withheld ? 'withheld from agents until reviewed' : 'agents keep the accepted contract meanwhile';
  const lines = [
    `${c.server}/${visible(c.tool)}  (${c.toolName})  ${c.kind === 'new' ? 'new tool' : 'changed'}  ${c.status}  ${effect}`,
    ...cidLines(c),
  ];
  for (const reason of c.incompatibility ?? []) lines.push(`  incompatible: ${visible(reason)}`);
  if (c.warnings.length > 0) {
    lines.push('  warnings:');
    for (const w of c.warnings) lines.push(`    ! ${w.code} (${w.field}): ${visible(w.message)}`);
  }
  if (c.diff.title !== undefined) lines.push(`  title: ${json(c.diff.title.before)} → ${json(c.diff.title.after)}`);
  if (c.diff.descriptionChanged || c.kind === 'new') {
    lines.push('  description:');
    const text = c.diff.description
      .map((p) =>
        p.op === 'same' ? visible(p.text) : p.op === 'added' ? `{+${visible(p.text)}+}` : `[-${visible(p.text)}-]`,
      )
      .join('');
    for (const line of (text === '' ? '(empty)' : text).split('\n')) lines.push(`    ${line}`);
  }
  if (c.diff.inputSchema.length > 0) {
    lines.push('  input schema:');
    for (const s of c.diff.inputSchema) lines.push(schemaLine(s));
  }
  if (c.diff.outputSchema.length > 0) {
    lines.push('  output schema:');
    for (const s of c.diff.outputSchema) lines.push(schemaLine(s));
  }
  if (c.diff.annotations.length > 0) {
    lines.push('  annotations:');
    for (const a of c.diff.annotations) lines.push(`    ~ ${a.key}: ${json(a.before)} → ${json(a.after)}`);
  }
  lines.push(
    `  accept: mcpx tools accept ${c.server} ${visible(c.tool)} ${c.cid}`,
    `  reject: mcpx tools reject ${c.server} ${visible(c.tool)} ${c.cid}`,
  );
  return lines.join('\n');
}

/** `tools review [SERVER] [--status pending|rejected|all]`: held changes with their diffs and warnings. */
export async function toolsReview(env: CliEnv, args: ParsedArgs, print: Print): Promise<void> {
  const server = args.positionals[2];
  const status = oneOfFlag(
    flag(args, 'status'),
    ['pending', 'rejected', 'all'],
    '--status is pending, rejected or all',
  );
  const res = await act(env, await readKey(env.keyFile), 'ListToolChanges', {
    ...(server !== undefined ? { server } : {}),
    ...(status !== undefined ? { status } : {}),
  });
  print(res, () =>
    res.changes.length === 0
      ? `no tool changes ${status === 'rejected' ? 'rejected' : 'waiting for review'}${server !== undefined ? ` on ${server}` : ''}`
      : res.changes.map(changeText).join('\n\n'),
  );
}

/** `tools accept SERVER TOOL CID` / `tools reject SERVER TOOL CID`. */
export function toolsDecide(decision: 'AcceptToolChange' | 'RejectToolChange') {
  return async (env: CliEnv, args: ParsedArgs, print: Print): Promise<void> => {
    const server = need(args, 2, 'SERVER');
    const tool = need(args, 3, 'TOOL');
    const cid = need(args, 4, 'CID');
    const res = await act(env, await readKey(env.keyFile), decision, { server, tool, cid });
    print(res, () =>
      res.decision === 'accepted'
        ? `accepted ${res.server}/${visible(res.tool)} ${res.cid}: agents get it now`
        : `rejected ${res.server}/${visible(res.tool)} ${res.cid}${res.withheld === false ? ' (agents keep the accepted contract)' : ' (withheld from agents)'}`,
    );
  };
}

/** `audit [--action A] [--kind K] [--target T] [--signer S] [--since ISO] [--until ISO] [--limit N] [--cursor C]`: the account's audit log, newest first. */
export async function audit(env: CliEnv, args: ParsedArgs, print: Print): Promise<void> {
  const limit = flag(args, 'limit');
  const n = limit === undefined ? undefined : Number(limit);
  if (n !== undefined && (!Number.isInteger(n) || n < 1)) throw new UsageError('--limit is a positive whole number');
  const filters: Record<string, unknown> = {};
  for (const [f, field] of [
    ['action', 'action'],
    ['kind', 'targetKind'],
    ['target', 'target'],
    ['signer', 'signer'],
    ['since', 'since'],
    ['until', 'until'],
    ['cursor', 'cursor'],
  ] as const) {
    const v = flag(args, f);
    if (v !== undefined) filters[field] = v;
  }
  const res = await act(env, await readKey(env.keyFile), 'ListAuditEvents', {
    ...(n !== undefined ? { limit: n } : {}),
    ...filters,
  });
  print(res, () => {
    if (res.events.length === 0) return 'no audit entries';
    const lines = res.events.map((e) => {
      const who = e.role === 'system' ? 'registry' : `${e.role} ${e.signer.slice(0, 12)}…`;
      const change =
        e.before !== undefined || e.after !== undefined ? `  ${json(e.before ?? null)} → ${json(e.after ?? null)}` : '';
      return `${e.at}  ${who}  ${e.action}  ${e.target.kind} ${visible(e.target.name)}${change}`;
    });
    if (res.nextCursor !== undefined) lines.push(`older: mcpx audit --cursor ${res.nextCursor}`);
    return lines.join('\n');
  });
}
