import { type AgentView, type ApprovalView, type RedactedMcpServer } from '@mcpx/contracts';
import { generateKeyPair } from '@mcpx/envelope';
import type { McpToolDocument } from '@mcpx/domain';
import { UsageError, flag, oneOfFlag, flags, keyValues, need, type ParsedArgs, type Print } from './args.js';
import { call, runsEnd } from './call-commands.js';
import { act, readKey, writeKey, type CliEnv } from './client.js';
import { agentNames } from './agent-names.js';
import { droppedSecretsLine } from './dropped-secrets.js';
import { authorizationLines, oauthClientLine, preRegisteredClient, serversAuthorize } from './oauth-commands.js';
import { inputsAnswer, inputsList } from './input-commands.js';
import { tasksCancel, tasksList, tasksResult, tasksShow } from './task-commands.js';
import { signersAuthorize, signersRevoke } from './signer-commands.js';
import { terminalText, toolCount } from './terminal-text.js';
import { toolsPermission, vendorsConnect, vendorsDisconnect } from './trust-commands.js';
import { agentsEndpoint, agentsTokens } from './endpoint-commands.js';
import { audit, toolsDecide, toolsReview } from './review-commands.js';
import { activity } from './activity-commands.js';

export interface Io {
  out(text: string): void;
}

type Command = (env: CliEnv, args: ParsedArgs, io: Io, json: boolean) => Promise<void>;

/** Human output carries remote strings: it reaches the terminal without control characters. */
function print(io: Io, json: boolean, value: unknown, human: () => string): void {
  io.out(json ? JSON.stringify(value, null, 2) : terminalText(human()));
}

/** A command of its own file, which prints through the `Print` it is given. */
function printing(run: (env: CliEnv, args: ParsedArgs, print: Print) => Promise<void>): Command {
  return (env, args, io, json) => run(env, args, (value, human) => print(io, json, value, human));
}

function serverLine(s: RedactedMcpServer): string {
  const host = (() => {
    try {
      return new URL(s.url).host;
    } catch {
      return s.url;
    }
  })();
  // As the console marks them: a server signed in with OAuth, or one sending a stored secret.
  const auth = s.auth === 'oauth' ? ' [oauth]' : s.hasSecrets || s.auth === 'bearer' ? ' [auth]' : '';
  const pin =
    s.pin !== undefined && s.pin !== 'off'
      ? `  [pinned: ${s.pin}${s.pendingReviews ? `, ${s.pendingReviews} to review: mcpx tools review ${s.name}` : ''}]`
      : '';
  switch (s.status.state) {
    case 'ok':
      return `${s.name}  connected, ${toolCount(s.tools.length)}  ${host}${auth}${s.status.transport ? ` (${s.status.transport})` : ''}${s.era !== undefined ? `  ${eraText(s)}` : ''}${pin}`;
    case 'error':
      return `${s.name}  unreachable: ${s.status.summary ?? s.status.error ?? 'unknown error'}  ${host}${auth}${s.tools.length > 0 ? ` (keeps ${toolCount(s.tools.length)})` : ''}`;
    case 'auth_required':
      return `${s.name}  waiting for authorization: ${s.status.summary ?? s.status.error ?? ''}  ${host}${auth}`;
    case 'unknown':
      return `${s.name}  not checked yet  ${host}${auth}`;
  }
}

/** `modern 2026-07-28` or `legacy 2025-11-25`: the era verdict of the server's last discovery. */
function eraText(s: RedactedMcpServer): string {
  return `${s.era ?? 'unknown era'}${s.protocolVersion !== undefined ? ` ${s.protocolVersion}` : ''}`;
}

function serverDetail(s: RedactedMcpServer): string {
  const lines = [serverLine(s), `  id: ${s.id}`, `  url: ${s.url}`, `  transport: ${s.transport ?? 'auto'}`];
  if (s.era !== undefined) lines.push(`  protocol: ${eraText(s)}`);
  for (const t of s.status.skippedTools ?? []) lines.push(`  skipped tool: ${t.name} — ${t.reason}`);
  for (const t of s.status.heldTools ?? [])
    lines.push(
      `  held for review: ${t.name}, held contract ${t.cid} (${t.state}${t.withheld ? ', withheld from agents' : ', agents keep the accepted contract'})`,
    );
  if (s.headerNames.length > 0) lines.push(`  headers: ${s.headerNames.join(', ')}`);
  if (s.secretHeaderNames.length > 0) lines.push(`  secret headers: ${s.secretHeaderNames.join(', ')}`);
  if (s.oauthClient !== undefined) lines.push(`  oauth client: ${oauthClientLine(s.oauthClient)}`);
  // The one line above says it in words; the failure as it came is here (and in --json).
  if (s.status.summary !== undefined && s.status.error !== undefined) lines.push(`  detail: ${s.status.error}`);
  if (s.status.checkedAt)
    lines.push(`  checked: ${s.status.checkedAt}${s.status.lastOkAt ? `, last ok: ${s.status.lastOkAt}` : ''}`);
  for (const t of s.tools) {
    const level =
      t.permission === undefined ? '' : `  [${t.permission}${t.permissionOverridden ? ', set by the owner' : ''}]`;
    lines.push(`  - ${t.toolName}${level}${t.description ? ` — ${t.description.split('\n')[0]}` : ''}`);
  }
  return lines.join('\n');
}

function agentLine(a: AgentView): string {
  return `${a.name}  (${a.id})  grants: ${a.grants.mcpServers.length > 0 ? a.grants.mcpServers.join(', ') : 'none'}`;
}

const keysNew: Command = async (env, args, io, json) => {
  const existing = await readKey(env.keyFile).catch(() => null);
  if (existing !== null && flag(args, 'force') !== 'true') {
    throw new UsageError(`a key exists at ${env.keyFile} (account ${existing.principal}); pass --force to replace it`);
  }
  const key = generateKeyPair();
  await writeKey(env.keyFile, key);
  print(
    io,
    json,
    { principal: key.principal, keyFile: env.keyFile },
    () => `account ${key.principal}\nkey written to ${env.keyFile}`,
  );
};

const serversSet: Command = async (env, args, io, json) => {
  const name = need(args, 2, 'NAME');
  const url = need(args, 3, 'URL');
  const transport = oneOfFlag(flag(args, 'transport'), ['http', 'sse'], '--transport is http or sse');
  const headers = keyValues(flags(args, 'header'), 'header');
  const secretHeaders = keyValues(flags(args, 'secret-header'), 'secret-header');
  const auth = oneOfFlag(
    flag(args, 'auth'),
    ['oauth', 'bearer', 'headers', 'none'],
    '--auth is oauth, bearer, headers or none',
  );
  const token = flag(args, 'token');
  const pin = oneOfFlag(flag(args, 'pin'), ['off', 'review', 'strict'], '--pin is off, review or strict');
  const config = {
    url,
    ...(pin !== undefined ? { pin } : {}),
    ...(transport ? { transport } : {}),
    ...(Object.keys(headers).length > 0 ? { headers } : {}),
    ...(Object.keys(secretHeaders).length > 0 ? { secretHeaders } : {}),
    ...(auth !== undefined ? { auth } : {}),
    ...(token !== undefined ? { token } : {}),
    ...preRegisteredClient(args),
  };
  const key = await readKey(env.keyFile);
  const res = await act(env, key, 'SetMcpServer', { name, config });
  const { server } = res;
  // JSON keeps the server as before; an oauth server adds where to authorize, a move what was dropped.
  const shown = {
    ...server,
    ...(res.authorizationUrl !== undefined ? { authorizationUrl: res.authorizationUrl } : {}),
    ...(res.authorizationError !== undefined ? { authorizationError: res.authorizationError } : {}),
    ...(res.droppedSecrets !== undefined ? { droppedSecrets: res.droppedSecrets } : {}),
  };
  print(
    io,
    json,
    shown,
    () =>
      serverLine(server) + droppedSecretsLine(res.droppedSecrets) + authorizationLines(res) + savedInErrorLine(server),
  );
};

/** After a failed connect: the server is saved and probed again; where the failure as it came is. */
function savedInErrorLine(server: RedactedMcpServer): string {
  if (server.status.state !== 'error') return '';
  return `\n  saved; probed again in the background (mcpx servers refresh ${server.name} tries now); the failure as it came: mcpx servers show ${server.name}`;
}

const serversList: Command = async (env, _args, io, json) => {
  const key = await readKey(env.keyFile);
  const res = await act(env, key, 'ListMcpServers', {});
  print(io, json, res, () =>
    res.servers.length === 0 ? 'no servers yet: mcpx servers set NAME URL' : res.servers.map(serverLine).join('\n'),
  );
};

const serversShow: Command = async (env, args, io, json) => {
  const name = need(args, 2, 'NAME');
  const key = await readKey(env.keyFile);
  const res = await act(env, key, 'ListMcpServers', {});
  const server = res.servers.find((s) => s.name === name);
  if (server === undefined) throw new Error(`not_found: no MCP server named ${name}`);
  print(io, json, server, () => serverDetail(server));
};

const serversRefresh: Command = async (env, args, io, json) => {
  const key = await readKey(env.keyFile);
  const { server } = await act(env, key, 'RefreshMcpServer', { name: need(args, 2, 'NAME') });
  print(io, json, server, () => serverLine(server));
};

const serversDelete: Command = async (env, args, io, json) => {
  const key = await readKey(env.keyFile);
  const res = await act(env, key, 'DeleteMcpServer', { name: need(args, 2, 'NAME') });
  print(io, json, res, () => `deleted ${res.name}`);
};

const agentsCreate: Command = async (env, args, io, json) => {
  const key = await readKey(env.keyFile);
  const { agent } = await act(env, key, 'CreateAgent', {
    name: need(args, 2, 'NAME'),
    definition: { mcpServers: flags(args, 'grant') },
  });
  print(io, json, agent, () => agentLine(agent));
};

function changeGrants(add: boolean): Command {
  return async (env, args, io, json) => {
    const ref = need(args, 2, 'AGENT');
    const servers = args.positionals.slice(3);
    if (servers.length === 0) throw new UsageError('name at least one SERVER');
    const key = await readKey(env.keyFile);
    const { agent: current } = await act(env, key, 'GetAgent', { agent: ref });
    const grants = add
      ? [...current.definition.mcpServers, ...servers.filter((s) => !current.definition.mcpServers.includes(s))]
      : current.definition.mcpServers.filter((s) => !servers.includes(s));
    const { agent } = await act(env, key, 'UpdateAgent', { agent: current.id, definition: { mcpServers: grants } });
    print(io, json, agent, () => agentLine(agent));
  };
}

const agentsShow: Command = async (env, args, io, json) => {
  const key = await readKey(env.keyFile);
  const { agent } = await act(env, key, 'GetAgent', { agent: need(args, 2, 'AGENT') });
  print(io, json, agent, () => agentLine(agent));
};

const agentsList: Command = async (env, _args, io, json) => {
  const key = await readKey(env.keyFile);
  const res = await act(env, key, 'ListAgents', {});
  print(io, json, res, () =>
    res.agents.length === 0 ? 'no agents yet: mcpx agents create NAME' : res.agents.map(agentLine).join('\n'),
  );
};

interface AgentTools {
  agent: string;
  version: number;
  tools: Array<McpToolDocument & { cid: string }>;
  conflicts: Array<{ name: string; server: string; heldBy: string }>;
  index: string;
  listing: string;
}

async function agentTools(env: CliEnv, args: ParsedArgs): Promise<AgentTools> {
  const agent = flag(args, 'agent');
  if (agent === undefined) throw new UsageError('--agent AGENT is required');
  return act(env, await readKey(env.keyFile), 'ListAgentTools', { agent });
}

const toolsLs: Command = async (env, args, io, json) => {
  const res = await agentTools(env, args);
  // Tools a pinned server holds for review are in no set: say so, and where to review them.
  const held = res.conflicts
    .filter((c) => c.heldBy === 'held_for_review')
    .map((c) => `held for review: ${c.name} (${c.server}): mcpx tools review ${c.server}`);
  print(io, json, res, () =>
    [
      res.tools.length === 0 ? 'no tools: grant a server with `mcpx agents grant AGENT SERVER`' : res.listing,
      ...held,
    ].join('\n'),
  );
};

const toolsIndex: Command = async (env, args, io, json) => {
  const res = await agentTools(env, args);
  print(io, json, { index: res.index }, () => res.index);
};

const toolsShow: Command = async (env, args, io, json) => {
  const name = need(args, 2, 'TOOL');
  const res = await agentTools(env, args);
  const doc = res.tools.find((t) => t.name === name);
  const held = res.conflicts.find((c) => c.name === name && c.heldBy === 'held_for_review');
  if (doc === undefined && held !== undefined)
    throw new Error(
      `held_for_review: ${name} waits for a review of its changed or new contract: mcpx tools review ${held.server}`,
    );
  if (doc === undefined) throw new Error(`not_found: no tool ${name} for this agent`);
  print(io, json, doc, () => JSON.stringify(doc, null, 2));
};

/** `tools search QUERY [--family mcp:SLUG] [--agent AGENT] [--limit N]`: words after `search` form the query. */
const toolsSearch: Command = async (env, args, io, json) => {
  const query = args.positionals.slice(2).join(' ');
  if (query.trim() === '') throw new UsageError('missing QUERY');
  const family = flag(args, 'family');
  const agent = flag(args, 'agent');
  const limit = flag(args, 'limit');
  const res = await act(env, await readKey(env.keyFile), 'SearchTools', {
    query,
    ...(family !== undefined ? { family } : {}),
    ...(agent !== undefined ? { agent } : {}),
    ...(limit !== undefined ? { limit: Number(limit) } : {}),
  });
  print(io, json, res, () =>
    res.families.length === 0
      ? `no tools match "${query}"`
      : res.families
          .map((f) =>
            [
              f.family,
              ...f.tools.map(
                (t) => `  ${t.name}  ${t.score.toFixed(2)}${t.description ? `  ${t.description.split('\n')[0]}` : ''}`,
              ),
            ].join('\n'),
          )
          .join('\n'),
  );
};

/** JSON with every object's keys sorted, as the registry keeps the arguments for display. */
function canonicalJson(value: unknown): string {
  const sort = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(sort)
      : v !== null && typeof v === 'object'
        ? Object.fromEntries(
            Object.keys(v)
              .sort()
              .map((k) => [k, sort((v as Record<string, unknown>)[k])]),
          )
        : v;
  return JSON.stringify(sort(value));
}

/** One pending approval with its whole canonical arguments: what is shown is what is approved. */
function approvalLine(a: ApprovalView, names: ReadonlyMap<string, string>): string {
  const args =
    a.arguments === undefined ? '(too large to show: this call can only be denied)' : canonicalJson(a.arguments);
  return `${a.id}  ${a.tool}  run ${a.run}  agent ${names.get(a.agent) ?? a.agent}  expires ${a.expiresAt}\n  arguments: ${args}`;
}

const approvalsList: Command = async (env, _args, io, json) => {
  const key = await readKey(env.keyFile);
  const res = await act(env, key, 'ListApprovals');
  const names = json
    ? new Map<string, string>()
    : await agentNames(
        env,
        key,
        res.approvals.map((a) => a.agent),
      );
  print(io, json, res, () =>
    res.approvals.length === 0
      ? 'no calls are waiting for approval'
      : res.approvals.map((a) => approvalLine(a, names)).join('\n'),
  );
};

function decideApproval(type: 'ApproveToolCall' | 'DenyToolCall'): Command {
  return async (env, args, io, json) => {
    const approvalId = need(args, 2, 'ID');
    const { approval } = await act(env, await readKey(env.keyFile), type, { approvalId });
    print(io, json, approval, () =>
      approval.status === 'approved'
        ? `approved ${approval.id}: re-send the call with --run ${approval.run} --approval ${approval.id}`
        : `denied ${approval.id}`,
    );
  };
}

export const COMMANDS: Record<string, Command> = {
  'keys new': keysNew,
  'servers set': serversSet,
  'servers list': serversList,
  'servers show': serversShow,
  'servers refresh': serversRefresh,
  'servers delete': serversDelete,
  'servers authorize': printing(serversAuthorize),
  'agents create': agentsCreate,
  'agents grant': changeGrants(true),
  'agents revoke': changeGrants(false),
  'agents show': agentsShow,
  'agents list': agentsList,
  'agents endpoint': printing(agentsEndpoint),
  'agents tokens': printing(agentsTokens),
  'tools ls': toolsLs,
  'tools index': toolsIndex,
  'tools show': toolsShow,
  'tools search': toolsSearch,
  'tools permission': printing(toolsPermission),
  'tools review': printing(toolsReview),
  'tools accept': printing(toolsDecide('AcceptToolChange')),
  'tools reject': printing(toolsDecide('RejectToolChange')),
  audit: printing(audit),
  activity: printing(activity),
  'vendors connect': printing(vendorsConnect),
  'vendors disconnect': printing(vendorsDisconnect),
  'runs end': printing(runsEnd),
  'signers authorize': printing(signersAuthorize),
  'signers revoke': printing(signersRevoke),
  'approvals list': approvalsList,
  'approvals approve': decideApproval('ApproveToolCall'),
  'approvals deny': decideApproval('DenyToolCall'),
  'inputs list': printing(inputsList),
  'inputs answer': printing(inputsAnswer),
  'tasks list': printing(tasksList),
  'tasks show': printing(tasksShow),
  'tasks cancel': printing(tasksCancel),
  'tasks result': printing(tasksResult),
  call: printing(call),
};

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
