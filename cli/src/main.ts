import { homedir } from 'node:os';
import { join } from 'node:path';
import { WireError, type InputRequestItem } from '@mcpx/contracts';
import { UsageError, flag, parseArgs } from './args.js';
import { natsCredentialsFrom, type CliEnv } from './client.js';
import { COMMANDS, USAGE } from './commands.js';
import { questionLines } from './input-commands.js';
import { terminalText } from './terminal-text.js';

/** Error text names remote things (a server's error, a tool's name): no control characters reach the terminal. */
const writeErr = (text: string): void => void process.stderr.write(terminalText(text));

/** mcpx: a thin client of the action API and of the proxy. Exit 0 ok, 1 failed, 2 usage. */
async function main(argv: string[]): Promise<number> {
  let args;
  try {
    args = parseArgs(argv);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}\n`);
    return 2;
  }
  const json = flag(args, 'json') === 'true';
  const [a, b] = args.positionals;
  const command =
    (a !== undefined && b !== undefined ? COMMANDS[`${a} ${b}`] : undefined) ??
    (a !== undefined ? COMMANDS[a] : undefined);
  if (command === undefined || flag(args, 'help') === 'true') {
    process.stderr.write(`${USAGE}\n`);
    return a === undefined || flag(args, 'help') === 'true' ? 0 : 2;
  }
  const natsUrl = flag(args, 'nats') ?? (process.env.MCPX_NATS_URL || undefined);
  // The MCP endpoint's URL (agents endpoint, agents tokens new): the flag wins over the environment.
  if (flag(args, 'endpoint') === undefined && process.env.MCPX_ENDPOINT_URL)
    args.flags.set('endpoint', [process.env.MCPX_ENDPOINT_URL]);
  try {
    const natsCredentials = await natsCredentialsFrom({
      user: flag(args, 'nats-user') ?? (process.env.MCPX_NATS_USER || undefined),
      pass: flag(args, 'nats-password') ?? (process.env.MCPX_NATS_PASSWORD || undefined),
      file: flag(args, 'nats-credentials') ?? (process.env.MCPX_NATS_CREDENTIALS || undefined),
    });
    const env: CliEnv = {
      apiUrl: flag(args, 'api') ?? process.env.MCPX_API_URL ?? 'http://127.0.0.1:8080',
      // Calls go through the API unless an operator asks for NATS.
      viaNats: natsUrl !== undefined,
      natsUrl: natsUrl ?? 'nats://127.0.0.1:4222',
      natsPrefix: process.env.MCPX_NATS_PREFIX ?? '',
      keyFile: flag(args, 'key-file') ?? process.env.MCPX_KEY_FILE ?? join(homedir(), '.mcpx', 'key.json'),
      ...(natsCredentials ? { natsCredentials } : {}),
    };
    await command(env, args, { out: (t) => process.stdout.write(t + '\n') }, json);
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      writeErr(`${err.message}\n${USAGE}\n`);
      return 2;
    }
    if (err instanceof WireError) {
      const field = typeof err.details.field === 'string' ? ` (field ${err.details.field})` : '';
      if (json) process.stderr.write(JSON.stringify({ error: err.toJSON() }) + '\n');
      else writeErr(`error: ${err.code}: ${err.message}${field}\n`);
      if (!json && err.code === 'approval_required' && typeof err.details.approvalId === 'string') {
        const run = typeof err.details.run === 'string' ? ` --run ${err.details.run}` : '';
        writeErr(
          `approval: ${err.details.approvalId}\n  mcpx approvals approve ${err.details.approvalId}, then repeat the call with${run} --approval ${err.details.approvalId}\n`,
        );
      }
      if (
        !json &&
        err.code === 'input_required' &&
        typeof err.details.inputRequestId === 'string' &&
        Array.isArray(err.details.requests)
      ) {
        const id = err.details.inputRequestId;
        const run = typeof err.details.run === 'string' ? ` --run ${err.details.run}` : '';
        writeErr(
          `input request: ${id}\n${(err.details.requests as InputRequestItem[]).flatMap(questionLines).join('\n')}\n  answer it: mcpx inputs answer ${id} --accept NAME=VALUE… | --done | --decline | --cancel, then repeat the call with${run} --input ${id}\n  (or call with --wait-input SECONDS to wait for the answer)\n`,
        );
      }
      if (!json && err.code === 'invalid_arguments' && err.details.contract) {
        writeErr(`contract:\n${JSON.stringify(err.details.contract, null, 2)}\n`);
      }
      return 1;
    }
    writeErr(`error: ${(err as Error).message}\n`);
    return 1;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    writeErr(`error: ${(err as Error).message}\n`);
    process.exitCode = 1;
  },
);
