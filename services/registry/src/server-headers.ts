import type { StoredServerConfig } from './repositories/mcp-servers.repository.js';
import type { SecretsRepository } from './repositories/secrets.repository.js';

/** The secret name that holds a server's header value: `mcp-<server>-<header, lowercased>`. */
export function headerSecretName(server: string, header: string): string {
  return `mcp-${server}-${header.toLowerCase()}`;
}

/**
 * The header secrets a server owns: its secret references that carry its own generated name
 * (a reference to some other secret of the account is not the server's to delete).
 */
export function ownedSecretNames(server: string, config: StoredServerConfig): string[] {
  return Object.entries(config.secretRefs ?? {})
    .filter(([header, ref]) => ref === headerSecretName(server, header))
    .map(([, ref]) => ref);
}

/**
 * The headers to send to a server: static headers, then secret headers over them (a secret wins
 * over a static header of the same name, compared case-insensitively).
 */
export async function resolveHeaders(
  secrets: SecretsRepository,
  account: string,
  config: StoredServerConfig,
): Promise<Record<string, string>> {
  const refs = config.secretRefs ?? {};
  const opened = await secrets.open(account, Object.values(refs));
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(config.headers ?? {})) out[name.toLowerCase()] = value;
  for (const [name, ref] of Object.entries(refs)) {
    const value = opened.get(ref);
    if (value !== undefined) out[name.toLowerCase()] = value;
  }
  return out;
}
