import type { Kysely } from 'kysely';
import { decodePayload } from '@mcpx/contracts';
import type { Database, Db } from '@mcpx/db';

/**
 * The tables the proxy may read on its hot path, and nothing else: the one exception to "reads go
 * through the owner" (the README's layout: data has one owner), written down as a type. The registry owns the first nine, the
 * projector the last three; the proxy writes none of them.
 */
export type ProxyReadModel = Pick<
  Database,
  | 'registry.agents'
  | 'registry.mcp_servers'
  | 'registry.secrets'
  | 'registry.oauth_connections'
  | 'registry.vendor_connections'
  | 'registry.tool_permissions'
  | 'registry.builtin_discoveries'
  | 'registry.builtin_tool_permissions'
  | 'registry.era_verdicts'
  | 'projector.agent_tools'
  | 'projector.tool_documents'
  | 'projector.projected_servers'
>;

/** Reads only (`selectFrom`), of the {@link ProxyReadModel}'s tables only: a write, or a read of another table, does not compile. */
export type ProxyReads = Pick<Kysely<ProxyReadModel>, 'selectFrom'>;

/** The proxy's view of a connection to the owners' database (the same connection, narrowed to its reads). */
export function proxyReads(db: Db): ProxyReads {
  return db;
}

/**
 * The tables the agent MCP endpoint (services/endpoint) may read: the agent tokens it checks and
 * the agents they name, an agent's projection and the projected documents it lists (the first two
 * the registry's, the last two the projector's). The same hot-path exception as the proxy's,
 * narrower: the endpoint writes none of them.
 */
export type EndpointReadModel = Pick<
  Database,
  'registry.agent_tokens' | 'registry.agents' | 'projector.agent_tools' | 'projector.tool_documents'
>;

/** Reads only (`selectFrom`), of the {@link EndpointReadModel}'s tables only. */
export type EndpointReads = Pick<Kysely<EndpointReadModel>, 'selectFrom'>;

/** The endpoint's view of a connection to the owners' database (the same connection, narrowed to its reads). */
export function endpointReads(db: Db): EndpointReads {
  return db;
}

/**
 * A server's stored era verdict for `authContext` (`registry.era_verdicts`, written by the
 * registry's discovery), decoded but unchecked: each reader checks its shape. Undefined when none
 * is stored for that auth context (a verdict is never reused across contexts).
 */
export async function readEraVerdict(
  db: ProxyReads,
  account: string,
  server: string,
  authContext: string,
): Promise<unknown> {
  const row = await db
    .selectFrom('registry.era_verdicts')
    .select('verdict_cbor')
    .where('account_id', '=', account)
    .where('server', '=', server)
    .where('auth_context', '=', authContext)
    .executeTakeFirst();
  return row === undefined ? undefined : decodePayload<unknown>(row.verdict_cbor);
}
