import type { StoredServerConfig } from './repositories/mcp-servers.repository.js';
import type { SecretsRepository } from './repositories/secrets.repository.js';
import { urlOrigin } from './secret-origin.js';

/** The secret name that holds a server's header value: `mcp-<server>-<header, lowercased>`. */
export function headerSecretName(server: string, header: string): string {
  return `mcp-${server}-${header.toLowerCase()}`;
}

/** Whether `ref` is the server's own secret for `header` (the only kind a server may reference). */
export function isOwnSecretRef(server: string, header: string, ref: string): boolean {
  return ref === headerSecretName(server, header);
}

/**
 * The header secrets a server owns: its secret references that carry its own generated name
 * (a reference to some other secret of the account is not the server's to delete).
 */
export function ownedSecretNames(server: string, config: StoredServerConfig): string[] {
  return Object.entries(config.secretRefs ?? {})
    .filter(([header, ref]) => isOwnSecretRef(server, header, ref))
    .map(([, ref]) => ref);
}

/**
 * The headers to send to a server: static headers, then secret headers over them (a secret wins
 * over a static header of the same name, compared case-insensitively).
 *
 * A secret goes only to the origin of `config.url` and only if it was stored for that origin
 * (checked on every send, whatever the config says); given the server's `name`, only the
 * server's own secrets (`mcp-<server>-<header>`) are sent, so a reference to another server's
 * secret, from a config written before that rule, sends nothing.
 */
export async function resolveHeaders(
  secrets: SecretsRepository,
  account: string,
  config: StoredServerConfig,
  name?: string,
): Promise<Record<string, string>> {
  const refs = Object.entries(config.secretRefs ?? {}).filter(([header, ref]) => name === undefined || isOwnSecretRef(name, header, ref));
  const origin = urlOrigin(config.url);
  const opened = origin === '' ? new Map<string, string>() : await secrets.open(account, refs.map(([, ref]) => ref), origin);
  const out: Record<string, string> = {};
  for (const [header, value] of Object.entries(config.headers ?? {})) out[header.toLowerCase()] = value;
  for (const [header, ref] of refs) {
    const value = opened.get(ref);
    if (value !== undefined) out[header.toLowerCase()] = value;
  }
  return out;
}
