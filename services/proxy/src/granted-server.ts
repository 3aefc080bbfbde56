import { ErrorCodes, WireError } from '@mcpx/contracts';
import type { ServerCredentials } from '@mcpx/stored';
import type { Catalog } from './catalog.js';

/**
 * The server an agent reaches outside a tool call (a relayed request, an upstream watch), checked
 * as a call is: the agent exists, its grant names the server (the grant itself, never the
 * projection), and the account has the server. Warm entries first, with no I/O. `not_found` or
 * `not_granted` otherwise.
 */
export async function grantedServer(
  catalog: Catalog,
  req: { account: string; agent: string; server: string },
): Promise<ServerCredentials> {
  const agent = catalog.agentNow(req.account, req.agent) ?? (await catalog.agent(req.account, req.agent));
  if (agent === null) throw new WireError(ErrorCodes.notFound, 'this account has no such agent', { field: 'agent' });
  if (!agent.grants.has(req.server))
    throw new WireError(ErrorCodes.notGranted, `the agent is not granted the ${req.server} MCP server`, {
      server: req.server,
    });
  const server = catalog.serverNow(req.account, req.server) ?? (await catalog.server(req.account, req.server));
  if (server === null)
    throw new WireError(ErrorCodes.notFound, `no MCP server named ${req.server}`, { server: req.server });
  return server;
}
