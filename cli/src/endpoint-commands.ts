// The agent MCP endpoint from the CLI: where an agent's endpoint is, with config snippets for
// common MCP clients, and its bearer tokens (issued, listed and revoked by the account's OWNER).
import type { AgentTokenView } from '@mcpx/contracts';
import { UsageError, flag, need, type ParsedArgs, type Print } from './args.js';
import { readKey, act, type CliEnv } from './client.js';

/** The endpoint's base URL: `--endpoint URL` (or MCPX_ENDPOINT_URL), else the API's host on port 8083. */
export function endpointBase(env: CliEnv, args: ParsedArgs): string {
  const given = flag(args, 'endpoint');
  if (given !== undefined) {
    if (!URL.canParse(given) || !/^https?:$/.test(new URL(given).protocol))
      throw new UsageError('--endpoint must be an http(s) URL');
    return given.replace(/\/+$/, '');
  }
  const api = new URL(env.apiUrl);
  api.port = '8083';
  return api.origin;
}

/** The MCP Inspector release the printed command pins (the workspace's). */
export const INSPECTOR_VERSION = '2.12.0';

/** Config snippets of common MCP clients for one endpoint (the token, or a placeholder). */
export function clientSnippets(name: string, url: string, token: string): Record<string, string> {
  const auth = `Bearer ${token}`;
  return {
    // Cursor (~/.cursor/mcp.json), Windsurf and other `mcpServers` files with remote entries.
    mcpServers: JSON.stringify({ mcpServers: { [name]: { url, headers: { Authorization: auth } } } }, null, 2),
    // VS Code (.vscode/mcp.json).
    vscode: JSON.stringify({ servers: { [name]: { type: 'http', url, headers: { Authorization: auth } } } }, null, 2),
    claudeCode: `claude mcp add --transport http ${name} ${url} --header "Authorization: ${auth}"`,
    // The Inspector 2.x needs Node 22.19 or later: npx runs it on a Node 22 of its own (the `node`
    // package), so the command works where the system's Node is 20 (there a bare `npx
    // @modelcontextprotocol/inspector` picks an old release that cannot reach a URL).
    inspector: `npx -y -p node@22 -p @modelcontextprotocol/inspector@${INSPECTOR_VERSION} -- mcp-inspector --cli ${url} --transport http --header "Authorization: ${auth}" --method tools/list`,
  };
}

/**
 * `agents endpoint AGENT [--server NAME] [--token T] [--endpoint URL]`: the URL and config
 * snippets of the agent's merged face, or with `--server` of the per-server face of one server its
 * grant names (that server's tools, resources and prompts under their own names).
 */
export async function agentsEndpoint(env: CliEnv, args: ParsedArgs, print: Print): Promise<void> {
  const { agent } = await act(env, await readKey(env.keyFile), 'GetAgent', { agent: need(args, 2, 'AGENT') });
  const server = flag(args, 'server');
  if (server === 'true' || server === '')
    throw new UsageError('--server needs the name of a server granted to the agent');
  if (server !== undefined && !agent.grants.mcpServers.includes(server)) {
    throw new UsageError(
      `${agent.name} is not granted the server ${JSON.stringify(server.slice(0, 64))}: grant it with mcpx agents grant ${agent.name} ${server.slice(0, 64)}`,
    );
  }
  const base = `${endpointBase(env, args)}/v1/agents/${agent.id}`;
  const url = server === undefined ? `${base}/mcp` : `${base}/servers/${encodeURIComponent(server)}/mcp`;
  const token = flag(args, 'token') ?? '<TOKEN>';
  const name = (server === undefined ? `mcpx-${agent.name}` : `mcpx-${agent.name}-${server}`).replace(
    /[^A-Za-z0-9_-]/g,
    '-',
  );
  const snippets = clientSnippets(name, url, token);
  const what =
    server === undefined
      ? `MCP endpoint of agent ${agent.name}: ${url}`
      : `MCP endpoint of agent ${agent.name}, server ${server} alone (its tools under their own names): ${url}`;
  print({ agent: agent.name, id: agent.id, ...(server !== undefined ? { server } : {}), url, snippets }, () =>
    [
      what,
      `  both protocol eras (2026-07-28 and 2025-11-25), Streamable HTTP; header Authorization: Bearer <token>`,
      token === '<TOKEN>'
        ? '  a token: mcpx agents tokens new ' + agent.name + '   (then --token T here fills it in below)'
        : '',
      '',
      'Cursor, Windsurf and other mcpServers files:',
      snippets.mcpServers ?? '',
      '',
      'VS Code (.vscode/mcp.json):',
      snippets.vscode ?? '',
      '',
      'Claude Code:',
      `  ${snippets.claudeCode ?? ''}`,
      '',
      'MCP Inspector (command line):',
      `  ${snippets.inspector ?? ''}`,
    ]
      .filter((l, i) => l !== '' || i > 2)
      .join('\n'),
  );
}

function tokenLine(t: AgentTokenView): string {
  const expires = t.expiresAt === null ? 'never expires' : `expires ${t.expiresAt}`;
  return `${t.id}  ${t.name}  ${t.state}  created ${t.createdAt}  ${t.state === 'revoked' ? `revoked ${t.revokedAt ?? ''}` : expires}${t.userMayApprove ? '  user may approve' : ''}`;
}

/**
 * `agents tokens new AGENT [--name N] [--expires-days D] [--user-may-approve] | list AGENT | revoke ID`.
 * `--user-may-approve`: the token's holder may approve its own always_ask calls when the endpoint
 * asks (an elicitation to the MCP client's user), instead of waiting for the owner.
 */
export async function agentsTokens(env: CliEnv, args: ParsedArgs, print: Print): Promise<void> {
  const verb = need(args, 2, 'new, list or revoke');
  const key = await readKey(env.keyFile);
  switch (verb) {
    case 'new': {
      const agent = need(args, 3, 'AGENT');
      const days = flag(args, 'expires-days');
      const expiresInDays = days === undefined ? undefined : Number(days);
      if (expiresInDays !== undefined && !Number.isFinite(expiresInDays))
        throw new UsageError('--expires-days must be a number of days');
      const name = flag(args, 'name');
      const res = await act(env, key, 'CreateAgentToken', {
        agent,
        ...(name !== undefined ? { name } : {}),
        ...(expiresInDays !== undefined ? { expiresInDays } : {}),
        ...(flag(args, 'user-may-approve') === 'true' ? { userMayApprove: true } : {}),
      });
      const url = `${endpointBase(env, args)}/v1/agents/${encodeURIComponent(agent)}/mcp`;
      print({ ...res, url }, () =>
        [
          `token ${res.id} (${res.name}) for agent ${res.agent}, ${res.expiresAt === null ? 'never expires' : `expires ${res.expiresAt}`}${res.userMayApprove ? ', its user may approve its always_ask calls' : ''}:`,
          `  ${res.token}`,
          'shown this once: only its hash is kept. Revoke it with: mcpx agents tokens revoke ' + res.id,
          `endpoint: ${url}   (mcpx agents endpoint ${res.agent} --token … prints client config)`,
        ].join('\n'),
      );
      return;
    }
    case 'list': {
      const res = await act(env, key, 'ListAgentTokens', { agent: need(args, 3, 'AGENT') });
      print(res, () =>
        res.tokens.length === 0
          ? `no tokens for ${res.agent}: mcpx agents tokens new ${res.agent}`
          : res.tokens.map(tokenLine).join('\n'),
      );
      return;
    }
    case 'revoke': {
      const res = await act(env, key, 'RevokeAgentToken', { id: need(args, 3, 'ID') });
      print(res, () =>
        res.revoked ? `revoked ${res.id}: the endpoint refuses it from now on` : `${res.id} was revoked already`,
      );
      return;
    }
    default:
      throw new UsageError('agents tokens new AGENT | agents tokens list AGENT | agents tokens revoke ID');
  }
}
