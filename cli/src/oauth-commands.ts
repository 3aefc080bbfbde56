import type { RedactedMcpServer } from '@mcpx/contracts';
import { UsageError, flag, type ParsedArgs } from './args.js';
import { readKey, sendAction, type CliEnv } from './client.js';

/** What SetMcpServer, RefreshMcpServer and AuthorizeMcpServer answer for an oauth server. */
export interface AuthorizationAnswer {
  server: RedactedMcpServer;
  authorizationUrl?: string;
  authorizationError?: string;
}

/** The lines after a server's line when it waits for the owner: the URL to open, or why there is none. */
export function authorizationLines(res: AuthorizationAnswer): string {
  if (res.authorizationUrl !== undefined) return `\n  authorize in a browser: ${res.authorizationUrl}`;
  if (res.authorizationError !== undefined) return `\n  ${res.authorizationError}`;
  return '';
}

/**
 * `config.oauth` from `--client-id ID [--client-secret S]` (a client registered with the
 * authorization server beforehand); absent: dynamic registration.
 */
export function preRegisteredClient(args: ParsedArgs): { oauth?: { clientId: string; clientSecret?: string } } {
  const clientId = flag(args, 'client-id');
  const clientSecret = flag(args, 'client-secret');
  if (clientId === undefined) {
    if (clientSecret !== undefined) throw new UsageError('--client-secret needs --client-id');
    return {};
  }
  return { oauth: { clientId, ...(clientSecret !== undefined ? { clientSecret } : {}) } };
}

/** `mcpx servers authorize NAME`: a fresh authorization URL for an oauth server. */
export async function serversAuthorize(
  env: CliEnv,
  args: ParsedArgs,
  out: (value: unknown, human: () => string) => void,
): Promise<void> {
  const name = args.positionals[2];
  if (name === undefined) throw new UsageError('missing NAME');
  const key = await readKey(env.keyFile);
  const res = await sendAction<AuthorizationAnswer>(env, key, { type: 'AuthorizeMcpServer', name });
  out(res, () => (res.authorizationUrl !== undefined ? `open in a browser to authorize ${res.server.name}:\n${res.authorizationUrl}` : `${res.server.name}: ${res.authorizationError ?? 'no authorization needed'}`));
}
