import type { Kysely } from 'kysely';
import { ErrorCodes, WireError } from '@mcpx/contracts';
import type { Database } from '@mcpx/db';
import { Permission } from '@mcpx/domain';
import type { McpServerRecord } from '../catalog/mcp-servers.repository.js';
import type { ToolOverrides } from '../catalog/tool-permissions.repository.js';
import { urlOrigin } from '../credentials/secret-origin.js';
import type { ServersDeps } from './servers-deps.js';
import type { Caller } from '../shared/action-handler.js';

/** The tools an owner made `always_ask` (a human stops every call of them). */
export function alwaysAskTools(overrides: ToolOverrides | undefined): string[] {
  return Object.entries(overrides ?? {})
    .filter(([, p]) => p === Permission.always_ask)
    .map(([tool]) => tool);
}

function ownerOnly(what: string, server: string, tools: string[]): WireError {
  return new WireError(
    ErrorCodes.forbidden,
    `signer: only an OWNER may ${what}: the owner made ${tools.length === 1 ? 'a tool' : 'tools'} of ${server} always_ask`,
    {
      field: 'signer',
      server,
      tools,
    },
  );
}

/**
 * An owner's `always_ask` override is keyed by the server's id, so a new server record starts
 * from the inherited levels. Whatever could shed one is the owner's to do: for any other signer,
 * SetMcpServer may not move a server with such overrides to another origin, nor create a server
 * (or move one) onto the origin of a server with such overrides (a re-add under a new name);
 * DeleteMcpServer is guarded by {@link guardDelete}.
 */
export async function guardSet(
  deps: ServersDeps,
  caller: Caller,
  trx: Kysely<Database>,
  name: string,
  previous: McpServerRecord | null,
  url: string,
): Promise<void> {
  if (caller.role === 'OWNER') return;
  const target = urlOrigin(url);
  const moved = previous === null || urlOrigin(previous.config.url) !== target;
  if (!moved) return;
  const overrides = await deps.permissions.forAccount(caller.account, trx);
  if (previous !== null) {
    const held = alwaysAskTools(overrides.get(previous.id));
    if (held.length > 0) throw ownerOnly('move this server to another origin', name, held);
  }
  for (const other of await deps.servers.list(caller.account, trx)) {
    if (other.name === name || urlOrigin(other.config.url) !== target) continue;
    const held = alwaysAskTools(overrides.get(other.id));
    if (held.length > 0) throw ownerOnly(`add another server at the origin of ${other.name}`, other.name, held);
  }
}

/** DeleteMcpServer of a server with `always_ask` overrides is the owner's (the overrides go with it). */
export async function guardDelete(
  deps: ServersDeps,
  caller: Caller,
  trx: Kysely<Database>,
  server: McpServerRecord,
): Promise<void> {
  if (caller.role === 'OWNER') return;
  const held = alwaysAskTools(await deps.permissions.forServer(caller.account, server.id, trx));
  if (held.length > 0) throw ownerOnly('delete this server', server.name, held);
}

/**
 * DeleteVendorConnection sheds the overrides of the vendor's built-ins (they are keyed by the
 * connection): the owner's to do when any is `always_ask`. For the action to call inside its
 * transaction, before the connection is removed.
 */
export async function guardVendorDisconnect(
  deps: ServersDeps,
  caller: Caller,
  trx: Kysely<Database>,
  slugs: readonly string[],
): Promise<void> {
  if (caller.role === 'OWNER') return;
  const held = await deps.permissions.alwaysAskOfBuiltins(caller.account, slugs, trx);
  const first = held[0];
  if (first !== undefined)
    throw ownerOnly(
      'disconnect this vendor',
      first.slug,
      held.map((h) => `${h.slug}: ${h.tool}`),
    );
}
