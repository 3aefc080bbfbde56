import { readFileSync } from 'node:fs';
import type { McpServerConfigInput, RedactedMcpServer, RedactedOAuthClient } from '@mcpx/contracts';
import { UsageError, flag, need, type ParsedArgs, type Print } from './args.js';
import { readKey, act, type CliEnv } from './client.js';

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
 * `config.oauth` from `--client-id ID [--client-secret S] [--grant authorization_code|client_credentials]
 * [--private-key-file PATH --key-alg ALG] [--scope S]` (a client registered with the
 * authorization server beforehand); absent: dynamic registration. The key file's PEM is sent as
 * `privateKey` (the registry checks it and seals it).
 */
export function preRegisteredClient(args: ParsedArgs): { oauth?: McpServerConfigInput['oauth'] } {
  const clientId = flag(args, 'client-id');
  const clientSecret = flag(args, 'client-secret');
  const grant = flag(args, 'grant');
  const keyFile = flag(args, 'private-key-file');
  const keyAlg = flag(args, 'key-alg');
  const scope = flag(args, 'scope');
  if (clientId === undefined) {
    const orphan = [
      ['client-secret', clientSecret],
      ['grant', grant],
      ['private-key-file', keyFile],
      ['key-alg', keyAlg],
      ['scope', scope],
    ].find(([, v]) => v !== undefined);
    if (orphan !== undefined) throw new UsageError(`--${orphan[0]} needs --client-id`);
    return {};
  }
  if (grant !== undefined && grant !== 'authorization_code' && grant !== 'client_credentials')
    throw new UsageError('--grant is authorization_code or client_credentials');
  if ((keyFile === undefined) !== (keyAlg === undefined))
    throw new UsageError('--private-key-file and --key-alg go together');
  let privateKey: string | undefined;
  if (keyFile !== undefined) {
    try {
      privateKey = readFileSync(keyFile, 'utf8');
    } catch (err) {
      throw new UsageError(
        `--private-key-file: cannot read ${keyFile} (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
      );
    }
  }
  return {
    oauth: {
      clientId,
      ...(clientSecret !== undefined ? { clientSecret } : {}),
      ...(grant !== undefined ? { grant } : {}),
      ...(privateKey !== undefined
        ? { privateKey, keyAlg: keyAlg as NonNullable<McpServerConfigInput['oauth']>['keyAlg'] }
        : {}),
      ...(scope !== undefined ? { scope } : {}),
    },
  };
}

/** A pre-registered client as `servers show` prints it: which credential is set, never its value. */
export function oauthClientLine(c: RedactedOAuthClient): string {
  const credential = c.hasPrivateKey
    ? `private key set (${c.keyAlg ?? '?'})`
    : c.hasClientSecret
      ? 'client secret set'
      : 'no secret';
  return `${c.clientId} (${c.grant}, ${credential}${c.scope !== undefined ? `, scope ${c.scope}` : ''})`;
}

/**
 * `mcpx servers authorize NAME`: a fresh authorization URL for an oauth server: a ticket of the
 * registry that opens once, within minutes, and binds the authorization to the browser that
 * opens it (it must finish there).
 */
export async function serversAuthorize(env: CliEnv, args: ParsedArgs, out: Print): Promise<void> {
  const name = need(args, 2, 'NAME');
  const key = await readKey(env.keyFile);
  const res = await act(env, key, 'AuthorizeMcpServer', { name });
  out(res, () =>
    res.authorizationUrl !== undefined
      ? `open in a browser to authorize ${res.server.name} (the link opens once, within 10 minutes; finish in that browser):\n${res.authorizationUrl}`
      : `${res.server.name}: ${res.authorizationError ?? 'no authorization needed'}`,
  );
}
