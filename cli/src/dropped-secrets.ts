/**
 * What SetMcpServer dropped when the server moved to another origin (`scheme://host[:port]`): a
 * stored secret is only ever sent to the origin it was given for, so the owner gives it again.
 */
export interface DroppedSecrets {
  /** Secret headers not given again (`Authorization` is the bearer token). */
  headers: string[];
  /** The OAuth client and tokens were forgotten: the server authorizes again. */
  oauth: boolean;
}

/**
 * The line after a server's line that says which secrets the move dropped and how to give them
 * again; empty when nothing was dropped.
 */
export function droppedSecretsLine(dropped: DroppedSecrets | undefined): string {
  if (dropped === undefined || (dropped.headers.length === 0 && !dropped.oauth)) return '';
  const parts: string[] = [];
  const headers = dropped.headers.filter((h) => h.toLowerCase() !== 'authorization');
  if (dropped.headers.length !== headers.length)
    parts.push('the Authorization header, i.e. the bearer token (give it again with --token)');
  if (headers.length > 0)
    parts.push(
      `secret header${headers.length > 1 ? 's' : ''} ${headers.join(', ')} (give ${headers.length > 1 ? 'them' : 'it'} again with --secret-header)`,
    );
  if (dropped.oauth) parts.push('the OAuth client and tokens (authorize again: mcpx servers authorize NAME)');
  return `\n  moved to another origin, so its stored secrets were dropped: ${parts.join('; ')}`;
}
