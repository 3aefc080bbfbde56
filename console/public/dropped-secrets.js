// What SetMcpServer dropped when a server moved to another origin (`droppedSecrets {headers,
// oauth}`): a stored secret is only ever sent to the origin it was given for, so the owner enters
// it again. Pure: no DOM, so it is tested in Node.

/**
 * The sentence the console shows after such a save, or '' when nothing was dropped:
 * "moved to another origin: re-enter the bearer token, the secret header X-Api-Key and sign in again".
 */
export function droppedSecretsText(dropped) {
  const headers = Array.isArray(dropped?.headers) ? dropped.headers.filter((h) => typeof h === 'string') : [];
  const parts = [];
  const others = headers.filter((h) => h.toLowerCase() !== 'authorization');
  if (others.length !== headers.length) parts.push('the bearer token (Authorization)');
  if (others.length > 0) parts.push(`the secret header${others.length > 1 ? 's' : ''} ${others.join(', ')}`);
  const oauth = dropped?.oauth === true;
  if (parts.length === 0 && !oauth) return '';
  const reenter = parts.length > 0 ? `re-enter ${parts.join(' and ')}` : '';
  const signIn = oauth ? 'its OAuth client and tokens were forgotten: authorize again' : '';
  return `moved to another origin, so its stored secrets were dropped: ${[reenter, signIn].filter((s) => s !== '').join('; ')}`;
}
