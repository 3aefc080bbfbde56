/**
 * The server legs of conformance: the official server scenarios of a revision
 * (`@modelcontextprotocol/conformance server --requirements <revision>`) run directly against the
 * conformance fixture (`test/servers/conformance-upstream.ts`) and through the agent endpoint to
 * the same fixture (registered as a server of an account, granted to an agent, reached with an
 * agent token). The runner has no header option: a loopback front adds the token. Used by
 * `pnpm bench conformance` (figures) and `server-conformance.test.ts` (the gate in `npm test`).
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTokenFront } from '../endpoint/conformance-front.js';
import { startEndpointSystem, type EndpointSystem } from '../endpoint/endpoint-harness.js';
import { ROOT, conformanceTool, runTool, runToolRaw, type ConformanceRun, type Revision } from './run-conformance.js';

/** The name the fixture is registered under, and the agent it is granted to. */
export const FIXTURE_SERVER = 'conformance';
const AGENT = 'conformance-agent';

/**
 * Which face of the endpoint the through-leg uses: the per-server face
 * (`/v1/agents/<agent>/servers/<server>/mcp`, tools under their own names) when it answers, else
 * the merged face (`/v1/agents/<agent>/mcp`, tools as `<server>__<tool>`).
 */
export type Face = 'per-server' | 'merged';

export interface ServerLegs {
  /** The fixture's own URL. */
  directUrl: string;
  /** The front's URL of the face in use (the front adds the agent's token). */
  throughUrl: string;
  face: Face;
  stop(): Promise<void>;
}

/** The checked-in scenarios that fail through the endpoint today, each with its reason. */
export function endpointBaselinePath(revision: Revision): string {
  return join(ROOT, 'test', 'conformance', `expected-failures.endpoint.${revision}.yaml`);
}

/** A 2025 `initialize`: any face that exists answers it with something other than 404. */
async function answers(url: string): Promise<boolean> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'face-probe', version: '1' } },
    }),
    signal: AbortSignal.timeout(15_000),
  });
  await res.body?.cancel();
  return res.status !== 404;
}

/**
 * Starts the real system (registry, projector, proxy, endpoint on real NATS, Postgres and Redis)
 * with the fixture at `fixtureUrl` registered and granted, and the token front.
 */
export async function startServerLegs(fixtureUrl: string): Promise<ServerLegs> {
  const sys: EndpointSystem = await startEndpointSystem();
  let front: Awaited<ReturnType<typeof startTokenFront>> | undefined;
  try {
    await sys.system.setServer(FIXTURE_SERVER, fixtureUrl);
    const agent = await sys.system.createAgent(AGENT, [FIXTURE_SERVER]);
    const { token } = await sys.token(AGENT);
    front = await startTokenFront(sys.endpoint.url, token);
    const perServer = `${front.url}/v1/agents/${agent}/servers/${FIXTURE_SERVER}/mcp`;
    const face: Face = (await answers(perServer)) ? 'per-server' : 'merged';
    const running = front;
    return {
      directUrl: fixtureUrl,
      throughUrl: face === 'per-server' ? perServer : `${front.url}/v1/agents/${agent}/mcp`,
      face,
      stop: async () => {
        await running.close();
        await sys.stop();
      },
    };
  } catch (err) {
    await front?.close();
    await sys.stop();
    throw err;
  }
}

const SCENARIO_TIMEOUT_MS = 60_000;

export type ServerLegRun = ConformanceRun & {
  /** Per failed scenario: its first failing checks and the tool's messages (bounded). */
  notes: Map<string, string>;
  /**
   * Per scenario with a SHOULD-level warning: the same. The tool's summary counts such a
   * scenario as passed, its baseline check as failed (so a baseline lists it).
   */
  warnings: Map<string, string>;
};

/**
 * Runs a revision's server requirement set against `url`; with `baseline`, the tool holds the
 * run to that expected-failures file (exit code 0 when every failure is listed and no entry is
 * stale). Scenarios run one after another in the tool; run the legs side by side for speed. A
 * scenario gets a minute (the tool's default is 30 s): on a loaded machine a slow one is not a
 * failure; none waits out its time today, directly or through the endpoint.
 */
export async function runServerLeg(
  revision: Revision,
  url: string,
  opts: { baseline?: string; scenarioTimeoutMs?: number; timeoutMs?: number } = {},
): Promise<ServerLegRun> {
  const dir = await mkdtemp(join(tmpdir(), 'mcpx-conformance-'));
  try {
    const args = [
      conformanceTool().bin,
      'server',
      '--url',
      url,
      '--requirements',
      revision,
      '--timeout',
      String(opts.scenarioTimeoutMs ?? SCENARIO_TIMEOUT_MS),
      '--output-dir',
      dir,
    ];
    if (opts.baseline !== undefined) args.push('--expected-failures', opts.baseline);
    const run = await runTool(revision, args, opts.timeoutMs ?? 600_000);
    return { ...run, notes: await checkNotes(dir, 'FAILURE'), warnings: await checkNotes(dir, 'WARNING') };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Scored scenarios that passed with a warning. */
export function warnedScored(run: ServerLegRun): string[] {
  return run.scenarios.filter((s) => s.ok && !s.notScored && run.warnings.has(s.name)).map((s) => s.name);
}

/** The line `pnpm bench conformance` prints per revision. */
export function serverSummaryLine(through: ServerLegRun, direct: ServerLegRun, face: Face): string {
  const n = (r: ServerLegRun): string => `${r.scored.passed}/${r.scored.total}`;
  const warned = (r: ServerLegRun): string =>
    warnedScored(r).length === 0 ? '' : `, ${warnedScored(r).length} of them with a warning`;
  return `server ${through.revision}: through the endpoint ${n(through)} (direct ${n(direct)}${warned(direct)}) — ${face} face${warned(through)}`;
}

interface Check {
  id?: string;
  status?: string;
  errorMessage?: string;
  details?: { message?: string };
}

/** The tool writes `<dir>/server-<scenario>-<timestamp>/checks.json` per scenario. */
async function checkNotes(dir: string, status: 'FAILURE' | 'WARNING'): Promise<Map<string, string>> {
  const notes = new Map<string, string>();
  for (const entry of await readdir(dir)) {
    const scenario = /^server-(.+)-\d{4}-\d{2}-\d{2}T/.exec(entry)?.[1];
    if (scenario === undefined) continue;
    const checks = JSON.parse(await readFile(join(dir, entry, 'checks.json'), 'utf8').catch(() => '[]')) as Check[];
    const failed = checks
      .filter((c) => c.status === status)
      .map(
        (c) =>
          `${c.id ?? '?'}: ${(c.errorMessage ?? c.details?.message ?? status.toLowerCase()).replace(/\s+/g, ' ').slice(0, 160)}`,
      );
    if (failed.length > 0)
      notes.set(scenario, failed.slice(0, 2).join('; ') + (failed.length > 2 ? ` (+${failed.length - 2} more)` : ''));
  }
  return notes;
}

/**
 * Of `failing`, those that fail again when run alone. On a loaded machine a scenario can fail
 * once for the load (a socket dropped mid-flow); a second run tells that from a failure that
 * holds. Each one that passes the second time is reported on stderr, not hidden.
 */
export async function failingAgain(revision: Revision, url: string, failing: string[]): Promise<string[]> {
  const still: string[] = [];
  for (const scenario of failing) {
    // Alone, a scenario runs at the revision's wire version, as the requirement set runs it.
    const args = [
      conformanceTool().bin,
      'server',
      '--url',
      url,
      '--scenario',
      scenario,
      '--spec-version',
      revision,
      '--timeout',
      String(SCENARIO_TIMEOUT_MS),
    ];
    const tally = /Passed: (\d+)\/(\d+), (\d+) failed, (\d+) warnings/.exec(
      (await runToolRaw(args, 2 * SCENARIO_TIMEOUT_MS)).output,
    );
    if (tally !== null && Number(tally[2]) > 0 && tally[3] === '0' && tally[4] === '0') {
      process.stderr.write(`conformance ${revision} ${scenario} at ${url}: failed once, passed when run again\n`);
    } else still.push(scenario);
  }
  return still;
}
