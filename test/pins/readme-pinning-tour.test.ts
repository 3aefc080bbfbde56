import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnvFor, runCli, type CliResult } from '../support/cli.js';
import { RegistryHarness } from '../support/registry-harness.js';
import { ROOT } from '../support/system.js';

/**
 * The README's pinning walk-through, read from the README and run as printed: its server started
 * with the printed command (on a free port), each `npm run mcpx -- …` line run as `mcpx`, each
 * "in the server's terminal, type: X" typed on that server's stdin, and each output line the
 * README shows under a command (`#   …`) found in what the command printed. A README that drifts
 * from the product (a renamed flag, a changed line) fails here before a new user meets it.
 *
 * Placeholders in the README's output lines: `…` stands for any text; a time (`2026-12-01T…`)
 * for any time; `OWNER 3f9c…` for any signer; the printed port for the port the server took.
 * `bafyrei…` in a command is the CID `tools review` printed last.
 */

interface Step {
  kind: 'server' | 'mcpx' | 'type';
  /** The command's words (mcpx: after `npm run mcpx --`), or what is typed. */
  words: string[];
  /** The output lines the README shows under the command. */
  expected: string[];
  line: string;
}

const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');

/** The steps of the "Contract pinning and the audit log" section, in order. */
function tourSteps(): Step[] {
  const start = readme.indexOf('## Contract pinning and the audit log');
  const end = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, end === -1 ? undefined : end);
  const steps: Step[] = [];
  for (const block of section.matchAll(/```sh\n([\s\S]*?)```/g)) {
    for (const raw of block[1]!.split('\n')) {
      const line = raw.trimEnd();
      const typed = /^# in the server's terminal, type: (\S+)/.exec(line);
      if (typed) steps.push({ kind: 'type', words: [typed[1]!], expected: [], line });
      else if (line.startsWith('#   ')) steps.at(-1)?.expected.push(line.slice(1).trim());
      else if (line.startsWith('npm run mcpx -- '))
        steps.push({ kind: 'mcpx', words: words(line.slice('npm run mcpx -- '.length)), expected: [], line });
      else if (line.startsWith('node_modules/.bin/tsx '))
        steps.push({ kind: 'server', words: words(line.slice('node_modules/.bin/tsx '.length)), expected: [], line });
      else if (line !== '' && !line.startsWith('#'))
        throw new Error(`the tour test does not know this README line: ${line}`);
    }
  }
  return steps;
}

/** A command's words without its trailing comment. */
function words(command: string): string[] {
  return command
    .replace(/\s+#.*$/, '')
    .trim()
    .split(/\s+/);
}

/** An output line of the README as a pattern over one printed line. */
function linePattern(expected: string, port: string): RegExp {
  const escaped = expected
    .replaceAll('127.0.0.1:3003', `127.0.0.1:${port}`)
    .replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
    .replace(/\d{4}-\d\d-\d\dT…/g, '\\S+')
    .replace(/(OWNER|WRITER) [0-9a-z]+…/g, '$1 \\S+')
    .replaceAll('…', '.*?')
    .replace(/\s+/g, '\\s+');
  return new RegExp(escaped);
}

describe("the README's pinning walk-through, as printed", () => {
  let h: RegistryHarness;
  let server: ChildProcessWithoutNullStreams | undefined;
  let serverOut = '';
  beforeAll(async () => {
    h = await RegistryHarness.start();
  });
  afterAll(async () => {
    if (server && server.exitCode === null) {
      const exited = new Promise((resolve) => server!.once('exit', resolve));
      server.kill('SIGTERM');
      setTimeout(() => server?.kill('SIGKILL'), 5_000).unref();
      await exited;
    }
    await h?.stop();
  });

  /** Starts the README's server on a free port; resolves its URL. */
  const startServer = (args: string[]): Promise<string> => {
    const at = args.indexOf('--port');
    const given = at === -1 ? [...args, '--port', '0'] : args.map((a, i) => (i === at + 1 ? '0' : a));
    const child = spawn(join(ROOT, 'node_modules', '.bin', 'tsx'), given, {
      cwd: ROOT,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    server = child;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`the tour server printed no URL within 30 s: ${serverOut}`)),
        30_000,
      );
      child.stdout.on('data', (d: Buffer) => {
        serverOut += d.toString('utf8');
        const first = serverOut.split('\n').find((l) => l.startsWith('{'));
        if (first !== undefined) {
          clearTimeout(timer);
          resolve((JSON.parse(first) as { url: string }).url);
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`the tour server exited (${code}) before it listened`));
      });
    });
  };

  /** Types a change's name on the server's stdin and waits for it to say it switched. */
  const type = async (change: string): Promise<void> => {
    const seen = serverOut.length;
    server!.stdin.write(`${change}\n`);
    for (let i = 0; i < 100 && !serverOut.slice(seen).includes(`tools now: ${change}`); i++)
      await new Promise((r) => setTimeout(r, 100));
    expect(serverOut.slice(seen)).toContain(`tools now: ${change}`);
  };

  // A dozen mcpx runs, each its own node process compiling the CLI: minutes on a loaded box (its bound is below).
  it('pin a server, change a tool, see it held with its diff, accept it, agents get the new CID, and the audit log shows it', async () => {
    const steps = tourSteps();
    // The walk-through as the README has it: a server, then the commands of each step.
    expect(steps[0]?.kind).toBe('server');
    // The README shows what the commands print: the test checks every such line (a parser that found none would prove nothing).
    expect(steps.flatMap((s) => s.expected).length).toBeGreaterThanOrEqual(15);
    expect(steps.filter((s) => s.kind === 'type').map((s) => s.words[0])).toEqual(['description']);
    for (const verb of [
      ['servers', 'set'],
      ['servers', 'refresh'],
      ['tools', 'review'],
      ['tools', 'accept'],
      ['tools', 'show'],
      ['audit'],
    ])
      expect(
        steps.some((s) => s.kind === 'mcpx' && verb.every((w, i) => s.words[i] === w)),
        verb.join(' '),
      ).toBe(true);

    const { env } = cliEnvFor(h.api());
    let port = '';
    let url = '';
    let lastCid: string | undefined;
    let documentCid: string | undefined;
    const shown: string[] = [];
    for (const step of steps) {
      if (step.kind === 'server') {
        url = await startServer(step.words);
        port = new URL(url).port;
        continue;
      }
      if (step.kind === 'type') {
        await type(step.words[0]!);
        continue;
      }
      const args = step.words.map((w) =>
        w === 'http://127.0.0.1:3003/mcp' ? url : w === 'bafyrei…' ? (lastCid ?? w) : w,
      );
      // The agent's tools are projected a moment after `agents create`: a user would run the command again.
      let out: CliResult | undefined;
      let missing: string[] = [];
      for (let attempt = 0; attempt < 5; attempt++) {
        out = await runCli(args, env);
        missing = step.expected.filter((e) => !out!.stdout.split('\n').some((l) => linePattern(e, port).test(l)));
        const settled =
          !(args[0] === 'tools' && (args[1] === 'ls' || args[1] === 'show')) || /mail__send_email/.test(out.stdout);
        if (out.code === 0 && missing.length === 0 && settled) break;
        await new Promise((r) => setTimeout(r, 1_000));
      }
      expect(out!.code, `${step.line}\n${out!.stdout}${out!.stderr}`).toBe(0);
      expect(missing, `${step.line}\nprinted:\n${out!.stdout}`).toEqual([]);
      const accept = /accept: mcpx tools accept mail send_email (\S+)/.exec(out!.stdout);
      if (accept) lastCid = accept[1];
      const announced = /tool document: +(\S+) +\(what agents get once the change is accepted\)/.exec(out!.stdout);
      if (announced) documentCid = announced[1];
      if (args[0] === 'tools' && args[1] === 'show') shown.push(out!.stdout);
    }
    // The three looks at send_email: before the change, while it is held (unchanged: the accepted
    // contract), after the accept (the new description and another CID).
    expect(shown).toHaveLength(3);
    const cidOf = (text: string) => /bafy[a-z2-7]{20,}/.exec(text)?.[0];
    expect(shown[1]).toBe(shown[0]);
    expect(shown[0]).not.toContain('~/.ssh/id_rsa');
    expect(shown[2]).toContain('~/.ssh/id_rsa');
    expect(cidOf(shown[2]!)).toBeDefined();
    expect(cidOf(shown[2]!)).not.toBe(cidOf(shown[0]!));
    // The document `tools review` announced is the one agents now get.
    expect(documentCid).toMatch(/^bafy/);
    expect(shown[2]).toContain(documentCid);
  }, 300_000);
});
