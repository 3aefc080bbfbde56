// `mcpx servers …`: the account's remote MCP servers, set, listed, shown, refreshed and deleted.
import type { RedactedMcpServer } from '@mcpx/contracts';
import { flag, oneOfFlag, flags, keyValues, need, type ParsedArgs, type Print } from './args.js';
import { act, readKey, type CliEnv } from './client.js';
import { droppedSecretsLine } from './dropped-secrets.js';
import { authorizationLines, oauthClientLine, preRegisteredClient } from './oauth-commands.js';
import { toolCount } from './terminal-text.js';

export function serverLine(s: RedactedMcpServer): string {
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

export async function serversSet(env: CliEnv, args: ParsedArgs, print: Print): Promise<void> {
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
    shown,
    () =>
      serverLine(server) + droppedSecretsLine(res.droppedSecrets) + authorizationLines(res) + savedInErrorLine(server),
  );
}

/** After a failed connect: the server is saved and probed again; where the failure as it came is. */
function savedInErrorLine(server: RedactedMcpServer): string {
  if (server.status.state !== 'error') return '';
  return `\n  saved; probed again in the background (mcpx servers refresh ${server.name} tries now); the failure as it came: mcpx servers show ${server.name}`;
}

export async function serversList(env: CliEnv, _args: ParsedArgs, print: Print): Promise<void> {
  const key = await readKey(env.keyFile);
  const res = await act(env, key, 'ListMcpServers', {});
  print(res, () =>
    res.servers.length === 0 ? 'no servers yet: mcpx servers set NAME URL' : res.servers.map(serverLine).join('\n'),
  );
}

export async function serversShow(env: CliEnv, args: ParsedArgs, print: Print): Promise<void> {
  const name = need(args, 2, 'NAME');
  const key = await readKey(env.keyFile);
  const res = await act(env, key, 'ListMcpServers', {});
  const server = res.servers.find((s) => s.name === name);
  if (server === undefined) throw new Error(`not_found: no MCP server named ${name}`);
  print(server, () => serverDetail(server));
}

export async function serversRefresh(env: CliEnv, args: ParsedArgs, print: Print): Promise<void> {
  const key = await readKey(env.keyFile);
  const { server } = await act(env, key, 'RefreshMcpServer', { name: need(args, 2, 'NAME') });
  print(server, () => serverLine(server));
}

export async function serversDelete(env: CliEnv, args: ParsedArgs, print: Print): Promise<void> {
  const key = await readKey(env.keyFile);
  const res = await act(env, key, 'DeleteMcpServer', { name: need(args, 2, 'NAME') });
  print(res, () => `deleted ${res.name}`);
}
