import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { ModernClient, ModernStreamableHTTPClientTransport } from '../support/sdk-client.js';

// The README's tours start their MCP servers with `node_modules/.bin/tsx test/servers/…-main.ts`.
// Each such command is read from the README itself and run as printed (on a free port instead of
// the printed one, so that the suite never fights over it): the server must come up on loopback,
// speak 2026-07-28, and serve what the tour then connects to. A renamed file, a dropped flag or a
// launcher that no longer starts fails here before a new user meets it.
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const commands = [...readme.matchAll(/^node_modules\/\.bin\/tsx (test\/servers\/[\w-]+-main\.ts)(.*)$/gm)].map((m) => ({
  script: m[1]!,
  args: m[2]!
    .trim()
    .split(/\s+/)
    .filter((a) => a !== ''),
}));

/** What each tour expects of its server: the tools `tools/list` gives, or a 401 with OAuth metadata. */
const EXPECTED: Record<string, { tools: string[] } | { oauth: true }> = {
  'test/servers/echo-upstream-main.ts': { tools: ['add', 'echo'] },
  'test/servers/input-upstream-main.ts': {
    tools: ['deploy', 'list_roots', 'profile', 'provision', 'sign_in', 'summarize'],
  },
  'test/servers/shifting-upstream-main.ts': { tools: ['lookup', 'send_email'] },
  'test/servers/oauth-upstream-main.ts': { oauth: true },
  'test/servers/tasks-upstream-main.ts': {
    tools: ['clarify-export', 'confirm-then-export', 'long-export', 'never-ends', 'quick', 'settle-then-export'],
  },
};

const children: ChildProcess[] = [];
afterAll(async () => {
  await Promise.all(
    children.map(
      (c) =>
        new Promise((resolve) => {
          if (c.exitCode !== null || c.signalCode !== null) return resolve(null);
          c.once('exit', resolve);
          c.kill('SIGTERM');
          setTimeout(() => c.kill('SIGKILL'), 5_000).unref();
        }),
    ),
  );
});

/** Runs a README command with `--port 0`; resolves the URL the server prints once it listens. */
function start(script: string, args: string[]): Promise<string> {
  const at = args.indexOf('--port');
  const given = at === -1 ? [...args, '--port', '0'] : args.map((a, i) => (i === at + 1 ? '0' : a));
  const child = spawn(join(root, 'node_modules', '.bin', 'tsx'), [script, ...given], {
    cwd: root,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`${script} printed no URL within 30 s: ${out}${err}`)), 30_000);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString('utf8');
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line !== undefined && out.includes('\n')) {
        clearTimeout(timer);
        resolve((JSON.parse(line) as { url: string }).url);
      }
    });
    child.stderr.on('data', (d: Buffer) => (err += d.toString('utf8').slice(0, 4_000)));
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${script} exited (${code}) before it listened: ${err}`));
    });
  });
}

describe("the README's tour servers", () => {
  it('names every tour server the README starts', () => {
    expect(commands.map((c) => c.script).sort()).toEqual(Object.keys(EXPECTED).sort());
  });

  it.concurrent.each(commands.map((c) => [c.script, c] as const))(
    '%s starts as printed and serves the tour',
    async (script, { args }) => {
      const url = await start(script, args);
      expect(new URL(url).hostname).toBe('127.0.0.1');
      const expected = EXPECTED[script]!;
      if ('oauth' in expected) {
        // No token: 401 naming its protected-resource metadata, whose authorization server answers.
        const res = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
          body: '{}',
        });
        expect(res.status).toBe(401);
        const challenge = res.headers.get('www-authenticate') ?? '';
        const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)?.[1];
        expect(metadataUrl, challenge).toBeDefined();
        const metadata = (await (await fetch(metadataUrl!)).json()) as { authorization_servers: string[] };
        const issuer = metadata.authorization_servers[0]!;
        const as = await fetch(new URL('/.well-known/oauth-authorization-server', issuer));
        expect(as.status).toBe(200);
        expect(((await as.json()) as { registration_endpoint?: string }).registration_endpoint).toBeDefined();
        return;
      }
      const client = new ModernClient(
        { name: 'readme-tour', version: '1.0.0' },
        { versionNegotiation: { mode: 'auto' } },
      );
      await client.connect(new ModernStreamableHTTPClientTransport(new URL(url)));
      try {
        expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
        const { tools } = await client.listTools();
        expect(tools.map((t) => t.name).sort()).toEqual(expected.tools);
      } finally {
        await client.close();
      }
    },
    60_000,
  );
});
