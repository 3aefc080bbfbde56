import { headerSecretName, isOwnSecretRef } from '@mcpx/stored';
import type { StoredServerConfig } from '../catalog/mcp-servers.repository.js';

/**
 * The header secret names (`mcp-<server>-<header>`) are defined once, beside the reading that
 * sends only them (`@mcpx/stored`, which discovery and the proxy both read headers with).
 */
export { headerSecretName, isOwnSecretRef };

/**
 * The header secrets a server owns: its secret references that carry its own generated name
 * (a reference to some other secret of the account is not the server's to delete).
 */
export function ownedSecretNames(server: string, config: StoredServerConfig): string[] {
  return Object.entries(config.secretRefs ?? {})
    .filter(([header, ref]) => isOwnSecretRef(server, header, ref))
    .map(([, ref]) => ref);
}
