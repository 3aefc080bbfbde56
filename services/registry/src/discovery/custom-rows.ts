import { CredentialError } from '../shared/credential-error.js';
import type { DiscoveryDeps, DiscoveryTarget } from './discovery-types.js';

/** The account's own mcp_servers rows as a discovery target (built-ins bring their own). */
export function customRows(deps: DiscoveryDeps): DiscoveryTarget {
  return {
    kind: 'custom',
    find: (account, name) => deps.servers.find(account, name),
    headers: async (server) => {
      try {
        // Read as the proxy reads them (`@mcpx/stored`): only the server's own secrets, each
        // only to the origin it was sealed for, and its OAuth token; renewed first when it is about to expire.
        const held = await deps.credentials.custom(server.accountId, server);
        if (deps.oauthFreshen !== undefined && (await deps.oauthFreshen(server, held)))
          return (await deps.credentials.custom(server.accountId, server)).headers;
        return held.headers;
      } catch (err) {
        if (err instanceof CredentialError) throw err;
        // A secret sealed with a key that left the ring: the owner sees it, the operator logs it.
        deps.log.error('secret header did not open', {
          account: server.accountId,
          server: server.name,
          err: err as Error,
        });
        throw new CredentialError(
          'a secret header could not be decrypted (its key is not in the key ring); set the header again',
        );
      }
    },
    record: (server, status, tools, nextProbeAt, trx) =>
      deps.servers.recordDiscovery(server.accountId, server.id, status, tools, nextProbeAt, trx, server.updatedAt),
    overrides: async (account, serverId, trx) => deps.permissions?.forServer(account, serverId, trx),
  };
}
