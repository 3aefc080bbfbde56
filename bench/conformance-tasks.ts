/**
 * `pnpm bench conformance tasks`: the conformance suite's tasks scenarios (SEP-2663, extension
 * scenarios; `test/conformance/tasks-scenarios.ts`) run directly against the extension's fixture
 * (`test/servers/conformance-tasks-upstream.ts`) and through the agent endpoint's per-server face
 * to the same fixture (registered, granted, reached with an agent token a loopback front adds).
 * Prints each scenario, then `tasks: through the endpoint N/M (direct N/M)`; its part of
 * BENCHMARKS.md's `## Conformance` is written by bench/conformance.ts.
 */
import { availableParallelism, loadavg, totalmem } from 'node:os';
import { TASK_SCENARIOS } from '../test/conformance/tasks-scenarios.js';
import { startTokenFront } from '../test/endpoint/conformance-front.js';
import { runServerScenario, type ScenarioOutcome } from '../test/endpoint/endpoint-conformance.js';
import { startEndpointSystem } from '../test/endpoint/endpoint-harness.js';
import { startConformanceTasksUpstream } from '../test/servers/conformance-tasks-upstream.js';

const FIXTURE = 'fixtures';

const verdict = (o: ScenarioOutcome): string =>
  o.total === 0
    ? 'skipped by the suite'
    : o.failing.length === 0
      ? `pass (${o.passed}/${o.total})`
      : `**fail** (${o.passed}/${o.total}: ${o.failing.join(', ')})`;

/** Runs the legs and gives the markdown of the tasks part. */
export async function tasksPart(): Promise<string> {
  const upstream = await startConformanceTasksUpstream();
  const sys = await startEndpointSystem({ env: { TASK_LEASE_MS: '1500', TASK_POLL_MIN_MS: '100' } });
  let front: Awaited<ReturnType<typeof startTokenFront>> | undefined;
  try {
    await sys.system.setServer(FIXTURE, upstream.url);
    const agent = await sys.system.createAgent('conformance-tasks', [FIXTURE], 4);
    const { token } = await sys.token('conformance-tasks');
    front = await startTokenFront(sys.endpoint.url, token);
    const through = `${front.url}/v1/agents/${agent}/servers/${FIXTURE}/mcp`;
    const rows: string[] = [];
    let passedDirect = 0;
    let passedThrough = 0;
    let scored = 0;
    for (const s of TASK_SCENARIOS) {
      const [d, t] = await Promise.all([
        runServerScenario(upstream.url, s.scenario),
        runServerScenario(through, s.scenario),
      ]);
      if (d.total > 0) {
        scored++;
        if (d.failing.length === 0) passedDirect++;
        if (t.failing.length === 0) passedThrough++;
      }
      process.stdout.write(
        `direct ${verdict(d).replaceAll('**', '')}, through ${verdict(t).replaceAll('**', '')}  ${s.scenario}\n`,
      );
      rows.push(
        `| ${s.scenario} | ${verdict(d)} | ${verdict(t)} | ${t.failing.length > 0 ? (s.why ?? 'not expected') : ''} |`,
      );
    }
    const summary = `tasks: through the endpoint ${passedThrough}/${scored} (direct ${passedDirect}/${scored})`;
    process.stdout.write(`\n${summary}\n`);
    const when = `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, ${availableParallelism()} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, load average ${loadavg()[0]!.toFixed(1)} at the end`;
    return [
      '### Tasks scenarios (SEP-2663): the fixture directly and through the per-server face',
      '',
      '`pnpm bench conformance tasks`: the suite’s tasks scenarios (extension scenarios, run one by one',
      'without a spec version) against the extension’s fixture (`test/servers/conformance-tasks-upstream.ts`)',
      'and through the agent endpoint’s per-server face to it; `npm test` holds the through-leg to',
      '`test/conformance/tasks-scenarios.ts` (`test/endpoint/endpoint-tasks-conformance.test.ts`).',
      'The suite has no tasks client scenarios.',
      '',
      `Run ${when}. **${summary}**.`,
      '',
      '| scenario | direct | through the endpoint | why it fails through (the fixture fails it directly too where marked) |',
      '|---|---|---|---|',
      ...rows,
      '',
    ].join('\n');
  } finally {
    await front?.close();
    await sys.stop();
    await upstream.close();
  }
}
