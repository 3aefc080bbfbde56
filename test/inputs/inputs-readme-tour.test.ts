import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInputMcpServer, type InputMcpServer } from '../servers/input-mcp-server.js';
import { cliEnvFor, runCli, type CliResult } from '../support/cli.js';
import { ProxySystem } from '../support/proxy-system.js';
import { readmeCommandBlock, shellWords } from '../support/fixtures/readme-tour.js';
import { eventually } from '../support/system.js';
import { INPUT_TOOLS } from './input-system.js';

/** One `npm run mcpx -- …` line of the README and the output lines printed under it (`#   …`). */
interface TourStep {
  line: string;
  args: string[];
  expected: string[];
}

/** The README's input-requests tour: the shell block of `mcpx` commands under its heading, in order. */
function inputTour(): TourStep[] {
  const steps: TourStep[] = [];
  for (const raw of readmeCommandBlock('## Input requests', '"## Input requests"')) {
    if (raw.startsWith('npm run mcpx -- ')) {
      const words = shellWords(raw);
      steps.push({ line: raw, args: words.slice(4), expected: [] });
    } else if (raw.startsWith('#') && steps.length > 0) {
      steps.at(-1)!.expected.push(raw.replace(/^#\s+/, ''));
    }
  }
  return steps;
}

/**
 * Issue 13's "done when", from the README itself: every `mcpx` command of its input-requests tour
 * is run as printed (the tour server on a free port, `inp_…` the id the call printed), in order,
 * against the real system and the real tour server, and each prints what the README shows under it
 * (a `…` stands for text left out).
 */
describe("the README's input-requests tour, as printed", () => {
  let system: ProxySystem;
  let upstream: InputMcpServer;
  let env: Record<string, string>;

  beforeAll(async () => {
    [system, upstream] = await Promise.all([ProxySystem.start(), startInputMcpServer()]);
    ({ env } = cliEnvFor(system.api));
  });

  afterAll(async () => {
    await system?.stop();
    await upstream?.close();
  });

  // Six mcpx runs, each a node process of its own compiling the CLI: minutes on a loaded box (its bound is below).
  it('mcpx call shows "Deploy to prod?" and its id, inputs answer --accept confirm=true, and the re-sent call finishes', async () => {
    const steps = inputTour();
    expect(steps.map((s) => s.args.slice(0, 2).join(' '))).toEqual([
      'servers set',
      'agents create',
      'call --agent',
      'inputs list',
      'inputs answer',
      'call --agent',
    ]);
    const port = (text: string): string => text.replaceAll('127.0.0.1:3004', `127.0.0.1:${upstream.port}`);
    let inputId: string | undefined;
    for (const step of steps) {
      const args = step.args.map((a) => {
        if (!a.includes('inp_…')) return port(a);
        expect(inputId, `${step.line}: no input request id was printed before`).toBeDefined();
        return a.replace('inp_…', inputId!);
      });
      const out: CliResult = await runCli(args, env);
      const printed = `${out.stdout}${out.stderr}`;
      // Only the call that stops for input fails (exit 1, the question on stderr); every other step succeeds.
      expect(out.code, `${step.line}\n${printed}`).toBe(
        step.expected.some((e) => e.startsWith('error: input_required')) ? 1 : 0,
      );
      for (const line of step.expected) {
        for (const part of port(line)
          .split('…')
          .map((p) => p.trim())
          .filter((p) => p !== '')) {
          expect(printed, `${step.line}: README shows "${line}"`).toContain(
            inputId === undefined ? part : part.replace(/inp_$/, inputId),
          );
        }
      }
      inputId ??= /input request: (inp_[A-Za-z0-9_-]+)/.exec(printed)?.[1];
      // A person reads the output before typing the next command; the projector needs a moment for the new agent.
      if (step.args[0] === 'agents' && step.args[1] === 'create') {
        await eventually(
          async () =>
            (await system.api.act<{ tools: unknown[] }>('ListAgentTools', { agent: step.args[2] })).tools.length >=
            INPUT_TOOLS
              ? true
              : undefined,
          15_000,
          "the tour agent's tools",
        );
      }
      if (step.args[0] === 'inputs' && step.args[1] === 'list')
        expect(printed).toContain(`${inputId!}  ops__deploy  run r1`);
    }
    expect(inputId).toMatch(/^inp_/);
    expect(upstream.stats.responsesSeen.at(-1)).toEqual({ confirm: { action: 'accept', content: { confirm: true } } });
  }, 300_000);
});
