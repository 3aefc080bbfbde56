import { readFileSync } from 'node:fs';
import { ACTION_MAP, FieldRules, type ActionRequest } from '@mcpx/contracts';
import { UsageError, flag, need, type ParsedArgs, type Print } from './args.js';
import { act, readKey, type CliEnv } from './client.js';
import { toolCount } from './terminal-text.js';

const LEVELS: Record<string, 'act' | 'always_ask' | null> = {
  act: 'act',
  always_ask: 'always_ask',
  'always-ask': 'always_ask',
  inherited: null,
};

/** `tools permission SERVER TOOL act|always_ask|inherited`: the owner's level of one tool (its remote name). */
export async function toolsPermission(env: CliEnv, args: ParsedArgs, print: Print): Promise<void> {
  const [server, tool, level] = args.positionals.slice(2);
  if (server === undefined || tool === undefined || level === undefined)
    throw new UsageError('usage: tools permission SERVER TOOL act|always_ask|inherited');
  if (!(level in LEVELS)) throw new UsageError('the level is act, always_ask or inherited');
  const res = await act(env, await readKey(env.keyFile), 'SetToolPermission', {
    server,
    tool,
    permission: LEVELS[level] ?? null,
  });
  print(
    res,
    () =>
      `${res.server} ${res.tool}: ${res.permission}${res.overridden ? ` (the owner's; inherited: ${res.inherited})` : ' (inherited)'}`,
  );
}

/** What SetVendorConnection takes besides the vendor: its tokens. */
type VendorTokens = Omit<ActionRequest<'SetVendorConnection'>, 'vendor'>;

/** The tokens of a tokens file, checked by SetVendorConnection's own table (a bad field is named). */
function tokensFile(file: string): VendorTokens {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8')) as unknown;
  } catch {
    throw new UsageError('--tokens-file must be a readable JSON file {accessToken, refreshToken?, expiresAt?}');
  }
  const { vendor: _vendor, ...fields } = ACTION_MAP.SetVendorConnection.request;
  return FieldRules.shape(fields)(parsed, '');
}

/**
 * `vendors connect VENDOR (--access-token T | --tokens-file PATH) [--refresh-token R] [--expires-at ISO]`:
 * the account's connection to a vendor, which lights up its built-in servers. A tokens file (JSON
 * `{accessToken, refreshToken?, expiresAt?}`) keeps tokens out of the shell's history.
 */
export async function vendorsConnect(env: CliEnv, args: ParsedArgs, print: Print): Promise<void> {
  const vendor = need(args, 2, 'VENDOR');
  const file = flag(args, 'tokens-file');
  let tokens: VendorTokens;
  if (file !== undefined) tokens = tokensFile(file);
  else {
    const accessToken = flag(args, 'access-token');
    if (accessToken === undefined) throw new UsageError('--access-token T or --tokens-file PATH is required');
    const refreshToken = flag(args, 'refresh-token');
    const expiresAt = flag(args, 'expires-at');
    tokens = {
      accessToken,
      ...(refreshToken !== undefined ? { refreshToken } : {}),
      ...(expiresAt !== undefined ? { expiresAt } : {}),
    };
  }
  const res = await act(env, await readKey(env.keyFile), 'SetVendorConnection', { ...tokens, vendor });
  print(
    res,
    () => `connected ${res.vendor}: ${res.servers.map((s) => `${s.name} (${toolCount(s.tools.length)})`).join(', ')}`,
  );
}

/** `vendors disconnect VENDOR`: its built-ins go dark, out of every agent's grant. */
export async function vendorsDisconnect(env: CliEnv, args: ParsedArgs, print: Print): Promise<void> {
  const vendor = need(args, 2, 'VENDOR');
  const res = await act(env, await readKey(env.keyFile), 'DeleteVendorConnection', { vendor });
  print(res, () => `disconnected ${res.vendor}: ${res.servers.join(', ')} went dark`);
}
