import { generateKeyPair } from '@mcpx/envelope';
import { UsageError, flag, type ParsedArgs, type Print } from './args.js';
import { call, runsEnd } from './call-commands.js';
import { readKey, writeKey, type CliEnv } from './client.js';
import { serversAuthorize } from './oauth-commands.js';
import { inputsAnswer, inputsList } from './input-commands.js';
import { tasksCancel, tasksList, tasksResult, tasksShow } from './task-commands.js';
import { signersAuthorize, signersRevoke } from './signer-commands.js';
import { terminalText } from './terminal-text.js';
import { toolsPermission, vendorsConnect, vendorsDisconnect } from './trust-commands.js';
import { agentsEndpoint, agentsTokens } from './endpoint-commands.js';
import { audit, toolsDecide, toolsReview } from './review-commands.js';
import { activity } from './activity-commands.js';
import { serversDelete, serversList, serversRefresh, serversSet, serversShow } from './server-commands.js';
import { agentsCreate, agentsList, agentsShow, changeGrants } from './agent-commands.js';
import { toolsIndex, toolsLs, toolsSearch, toolsShow } from './tool-commands.js';
import { approvalsList, decideApproval } from './approval-commands.js';

export interface Io {
  out(text: string): void;
}

type Command = (env: CliEnv, args: ParsedArgs, io: Io, json: boolean) => Promise<void>;

/** Human output carries remote strings: it reaches the terminal without control characters. */
function print(io: Io, json: boolean, value: unknown, human: () => string): void {
  io.out(json ? JSON.stringify(value, null, 2) : terminalText(human()));
}

/** A command of its own file, which prints through the `Print` it is given. */
function printing(run: Run): Command {
  return (env, args, io, json) => run(env, args, (value, human) => print(io, json, value, human));
}

type Run = (env: CliEnv, args: ParsedArgs, print: Print) => Promise<void>;

async function keysNew(env: CliEnv, args: ParsedArgs, print: Print): Promise<void> {
  const existing = await readKey(env.keyFile).catch(() => null);
  if (existing !== null && flag(args, 'force') !== 'true') {
    throw new UsageError(`a key exists at ${env.keyFile} (account ${existing.principal}); pass --force to replace it`);
  }
  const key = generateKeyPair();
  await writeKey(env.keyFile, key);
  print(
    { principal: key.principal, keyFile: env.keyFile },
    () => `account ${key.principal}\nkey written to ${env.keyFile}`,
  );
}

/** The commands of one family (`servers`, `agents`, …), each named `<family> <verb>`. */
function family(name: string, runs: Record<string, Run>): Record<string, Run> {
  return Object.fromEntries(Object.entries(runs).map(([verb, run]) => [`${name} ${verb}`, run]));
}

/** Every command, by family, from the files that hold each family. */
const RUNS: Record<string, Run> = {
  ...family('keys', { new: keysNew }),
  ...family('servers', { set: serversSet, list: serversList, show: serversShow, refresh: serversRefresh }),
  ...family('servers', { delete: serversDelete, authorize: serversAuthorize }),
  ...family('agents', { create: agentsCreate, grant: changeGrants(true), revoke: changeGrants(false) }),
  ...family('agents', { show: agentsShow, list: agentsList, endpoint: agentsEndpoint, tokens: agentsTokens }),
  ...family('tools', { ls: toolsLs, index: toolsIndex, show: toolsShow, search: toolsSearch }),
  ...family('tools', { permission: toolsPermission, review: toolsReview }),
  ...family('tools', { accept: toolsDecide('AcceptToolChange'), reject: toolsDecide('RejectToolChange') }),
  ...family('vendors', { connect: vendorsConnect, disconnect: vendorsDisconnect }),
  ...family('signers', { authorize: signersAuthorize, revoke: signersRevoke }),
  ...family('approvals', { list: approvalsList }),
  ...family('approvals', { approve: decideApproval('ApproveToolCall'), deny: decideApproval('DenyToolCall') }),
  ...family('inputs', { list: inputsList, answer: inputsAnswer }),
  ...family('tasks', { list: tasksList, show: tasksShow, cancel: tasksCancel, result: tasksResult }),
  ...family('runs', { end: runsEnd }),
  audit,
  activity,
  call,
};

export const COMMANDS: Record<string, Command> = Object.fromEntries(
  Object.entries(RUNS).map(([name, run]) => [name, printing(run)]),
);

export const USAGE = `usage: mcpx <command> [--json]
  keys new [--force]
  servers set NAME URL [--transport http|sse] [--header K=V]... [--secret-header K=V]... [--pin off|review|strict]
  servers set NAME URL --auth oauth|bearer|headers|none [--token T]
  servers set NAME URL --auth oauth [--client-id ID [--client-secret S]]   (prints the authorization URL)
  servers set NAME URL --auth oauth --client-id ID --grant client_credentials
      (--client-secret S | --private-key-file PATH --key-alg ES256) [--scope S]   (machine to machine: nobody signs in)
  servers authorize NAME   (a fresh authorization URL for an oauth server)
  servers list | show NAME | refresh NAME | delete NAME
  agents create NAME [--grant SERVER]...
  agents grant AGENT SERVER... | agents revoke AGENT SERVER... | agents show AGENT | agents list
  agents endpoint AGENT [--server NAME] [--token T]   (the agent's MCP endpoint URL and client config; --server: one server's face; --endpoint URL or MCPX_ENDPOINT_URL)
  agents tokens new AGENT [--name N] [--expires-days D] [--user-may-approve] | agents tokens list AGENT | agents tokens revoke ID
  tools ls --agent AGENT | tools index --agent AGENT | tools show --agent AGENT TOOL
  tools search QUERY [--family mcp:SLUG] [--agent AGENT] [--limit N]
  tools permission SERVER TOOL act|always_ask|inherited   (TOOL: the name its server lists)
  tools review [SERVER] [--status pending|rejected|all]   (a pinned server's held tool changes, with their diffs)
  tools accept SERVER TOOL CID | tools reject SERVER TOOL CID
  audit [--action A] [--kind server|agent|tool|approval|input] [--target T] [--signer S] [--since ISO] [--until ISO] [--limit N] [--cursor C]
  activity [--agent A] [--server S] [--tool T] [--failed | --outcome ok|refused|error|lost] [--since ISO] [--until ISO] [--limit N] [--cursor C]
      (what agents called: time, result code, duration; never arguments or results)
  activity --figures [--server S]   (per server: calls, error rate, p50/p95 over the last hour and 24 hours)
  vendors connect VENDOR (--access-token T [--refresh-token R] [--expires-at ISO] | --tokens-file PATH)
  vendors disconnect VENDOR   (built-in servers: github, linear)
  call --agent AGENT [--run RUN] [--timeout-ms MS] [--approval ID | --wait-approval SECONDS] [--input ID | --wait-input SECONDS] [--task] [--no-wait] TOOL ['{json arguments}']
      (a call that becomes a task past its bound waits for it, its status on stderr; --no-wait prints the handle)
  approvals list | approvals approve ID | approvals deny ID
  inputs list | inputs answer ID (--accept NAME=VALUE [NAME=VALUE...] | --content JSON | --done | --decline | --cancel) [--key KEY]
      (a server's question in the middle of a call: answer it, then the waiting call goes on)
  runs end RUN
  tasks list [--agent AGENT] [--limit N] | tasks show ID | tasks cancel ID | tasks result ID
  signers authorize PRINCIPAL --role OWNER|WRITER|AGENT [--agent AGENT]...   (AGENT: bound to the agents named)
  signers revoke PRINCIPAL
every command: --json (machine-readable output), --api URL, --key-file PATH
environment: MCPX_API_URL (http://127.0.0.1:8080), MCPX_KEY_FILE (~/.mcpx/key.json)
operators only: call, runs end and tasks over NATS instead of the API with --nats URL (or MCPX_NATS_URL) and the
  runtime's NATS user: --nats-user U --nats-password P (MCPX_NATS_USER, MCPX_NATS_PASSWORD) or
  --nats-credentials FILE (MCPX_NATS_CREDENTIALS; npm start writes one); MCPX_NATS_PREFIX (none);
  a call over NATS prints the server's progress on stderr while it runs (not with --json)`;
