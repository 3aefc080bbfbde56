import { createHash } from 'node:crypto';

/**
 * The auth context of a connect to a remote MCP server: SHA-256 (hex) of the URL and every header
 * sent (names folded to lower case, sorted). An era verdict is stored and found under it, so one
 * credential's verdict never serves another, and the hash reveals nothing of a secret. The one
 * copy shared by the registry (which stores verdicts) and the proxy (which reads them).
 */
export function authContextOf(url: string, headers: Readonly<Record<string, string>>): string {
  const entries = Object.entries(headers)
    .map(([k, v]) => [k.toLowerCase(), v] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return createHash('sha256')
    .update(JSON.stringify([url, entries]))
    .digest('hex');
}
