import { ErrorCodes, WireError, type ActionResponse } from '@mcpx/contracts';
import { DiscoveredToolsColumn } from '@mcpx/stored';
import type { StoredServerConfig } from '../catalog/mcp-servers.repository.js';
import { keptUrl, redactServer } from './redaction.js';
import { grantedServers } from '../agents/agent-scope.js';
import { ownedSecretNames } from '../credentials/server-headers.js';
import { urlOrigin } from '../credentials/secret-origin.js';
import { forgetOAuthState } from '../credentials/oauth-reset.repository.js';
import { guardDelete, guardSet } from './override-guard.js';
import { refuseBuiltinSlug } from '../builtins/builtin-names.js';
import { validateServerConfig, validateServerNameInput } from './validation.js';
import { agentChangedEvent } from '../agents/agents.actions.js';
import { serverDeleted } from '../catalog/server-events.js';
import {
  storedOAuthClient,
  validatePreRegisteredClient,
  type PreRegisteredClient,
} from '../credentials/oauth/oauth-client-config.js';
import { withAuthorization } from './oauth.actions.js';
import { accountQuotas } from '../shared/quotas.js';
import type { ServersAction, ServersDeps } from './servers-deps.js';
import type { ToolOverrides } from '../catalog/tool-permissions.repository.js';
import type { ValidServerConfig } from '../credentials/valid-server-config.js';
import { refuseForeignSecretRefs, refuseUnknownSecretRefs, sealServerSecrets } from './server-secrets.js';
import type { Caller } from '../shared/action-handler.js';
import { auditBy, recordAudit } from '../audit/audit-log.js';
import { auditServer } from './server-audit.js';
import { isPinMode, pinModeOf, type PinMode } from '../review/pin-policy.js';
import { acceptContracts, clearPins } from '../review/pin-store.js';
import { toRecord, type McpServerRecord } from '../catalog/mcp-servers.repository.js';
import { contractCid } from '@mcpx/domain';
import type { Kysely } from 'kysely';
import type { Database } from '@mcpx/db';

export const listMcpServers: ServersAction<'ListMcpServers'> = async (deps, caller) => {
  // Independent reads in one round trip's time (the list is the console's most frequent read).
  const [servers, overrides, builtins, granted] = await Promise.all([
    deps.servers.list(caller.account),
    deps.permissions.forAccount(caller.account),
    deps.builtins?.lit(caller.account) ?? [],
    grantedServers(deps, caller),
  ]);
  // An AGENT signer sees only the servers its agents are granted, never an authorization URL
  // (it completes the owner's OAuth), and the URL's query only as `[redacted]` (redaction.ts).
  const role = caller.role;
  const shown = (s: McpServerRecord): boolean => granted === undefined || granted.has(s.name);
  return {
    servers: [
      ...servers.filter(shown).map((s) => redactServer(s, deps.style, overrides.get(s.id), { role })),
      ...builtins.filter(shown).map((s) => redactServer(s, deps.style, overrides.get(s.id), { builtin: true, role })),
    ],
  };
};

/** What SetMcpServer dropped because the server moved to another origin (names only, never values). */
type DroppedSecrets = NonNullable<ActionResponse<'SetMcpServer'>['droppedSecrets']>;

/**
 * Creates or updates a server by name, then discovers. A failed discovery still saves.
 *
 * Secrets stay with their origin (`scheme://host[:port]`): each is sealed for the origin it was
 * given for, and an update that moves the server to another origin drops every stored secret
 * header, bearer token and OAuth state not given again (`droppedSecrets` in the answer says which;
 * a `secretRefs` entry that tries to keep one across the move is refused). `secretRefs` may name
 * only secrets the server already holds under its own names.
 *
 * What the discovery needs of Redis (its lock, the account's lease) is taken before anything is
 * written (`saveAndDiscover`), and the pre-registered OAuth client and the tool overrides the
 * answer shows are written and read in the server's own transaction: a Redis or Postgres outage
 * until the save answers `unavailable` ("not run") with nothing written. After the save nothing
 * answers "not run": a store lost during the discovery or at its record is a failed discovery
 * (answered as saved, its error in the status, the discovery run again), and an OAuth
 * authorization that could not start is `authorizationError`.
 */
export const setMcpServer: ServersAction<'SetMcpServer'> = async (deps, caller, action) => {
  const name = validateServerNameInput(action.name, deps.style);
  const { pin: pinGiven, rest: configInput } = takePin(action.config);
  const config = validateServerConfig(configInput, deps.outbound, name);
  const oauthClient = validatePreRegisteredClient((action.config as { oauth?: unknown }).oauth, config.auth);
  refuseBuiltinSlug(name);
  let dropped: DroppedSecrets | undefined;
  let overrides: ToolOverrides = {};
  const discovered = await deps.discovery.saveAndDiscover(caller.account, name, async () => {
    const written = await writeServer(deps, caller, { name, config, pinGiven, oauthClient });
    dropped = written.dropped;
    overrides = written.overrides;
    if (dropped !== undefined)
      deps.log.info('server moved to another origin: its stored secrets were dropped', {
        account: caller.account,
        server: name,
        headers: dropped.headers,
        oauth: dropped.oauth,
      });
    return written.saved;
  });
  // Read with the write: Postgres lost from here on cannot turn a saved server into "not run".
  const answer = await withAuthorization(deps, discovered, async (s) =>
    redactServer(s, deps.style, overrides, { role: caller.role }),
  );
  return dropped === undefined ? answer : { ...answer, droppedSecrets: dropped };
};

/**
 * SetMcpServer's write, in one transaction: the server's config with its secrets sealed for its
 * origin, what a move to another origin drops, its pin, its pre-registered OAuth client, the audit
 * entry; and the server's tool overrides the answer shows (the discovery that follows never writes
 * them). A refusal (a guard, the account's quota of servers, a foreign secret ref), or Postgres
 * lost midway, writes nothing.
 */
async function writeServer(
  deps: ServersDeps,
  caller: Caller,
  given: {
    name: string;
    config: ValidServerConfig;
    pinGiven: PinMode | undefined;
    oauthClient: PreRegisteredClient | undefined;
  },
): Promise<{ saved: McpServerRecord; dropped: DroppedSecrets | undefined; overrides: ToolOverrides }> {
  const { name, config, pinGiven, oauthClient } = given;
  const origin = urlOrigin(config.url);
  return deps.db.transaction().execute(async (trx) => {
    await refuseUnknownSecretRefs(deps, caller.account, config, trx);
    await deps.accounts.ensure(caller.account, trx);
    const previous = await deps.servers.find(caller.account, name, trx);
    // A WRITER's edit sends back the URL it was shown, its query redacted: the stored one stays.
    config.url = keptUrl(config.url, previous);
    await guardSet(deps, caller, trx, name, previous, config.url);
    // A new server counts against the account's quota; the transaction writes nothing when refused.
    if (previous === null) await accountQuotas(deps).checkNewServer(trx, caller.account);
    const moved = previous !== null && urlOrigin(previous.config.url) !== origin;
    refuseForeignSecretRefs(config, previous, moved);
    const target = { account: caller.account, name, origin, moved };
    const { secretRefs, droppedHeaders } = await sealServerSecrets(deps, target, config, previous, trx);
    const oauthDropped = moved && previous !== null ? await forgetOAuthState(trx, caller.account, previous.id) : false;
    const stored: StoredServerConfig = {
      url: config.url,
      ...(config.transport ? { transport: config.transport } : {}),
      ...(Object.keys(config.headers).length > 0 ? { headers: config.headers } : {}),
      ...(Object.keys(secretRefs).length > 0 ? { secretRefs } : {}),
      ...(config.auth ? { auth: config.auth } : {}),
      ...oauthClientConfig(config.auth, oauthClient, moved ? undefined : previous?.config),
    };
    // The pin: as given, else the server's own, else (a new server) the operator's default.
    const pin: PinMode =
      pinGiven ?? (previous !== null ? pinModeOf(previous.config) : (deps.pins?.defaultMode ?? 'off'));
    if (pin !== 'off') stored.pin = pin;
    const saved = await saveServer(deps, caller, trx, { name, previous }, stored);
    if (oauthClient !== undefined) await deps.oauth?.preRegister(saved, oauthClient, trx);
    const overrides = await deps.permissions.forServer(caller.account, saved.id, trx);
    const dropped: DroppedSecrets | undefined =
      droppedHeaders.length > 0 || oauthDropped ? { headers: droppedHeaders, oauth: oauthDropped } : undefined;
    return { saved, dropped, overrides };
  });
}

/**
 * Writes the stored config, follows a pin that changed and records the audit entry; plain http to
 * a host that may not have it (the table's check) is the caller's `config.url` error.
 */
async function saveServer(
  deps: Pick<ServersDeps, 'servers'>,
  caller: Caller,
  trx: Kysely<Database>,
  target: { name: string; previous: McpServerRecord | null },
  stored: StoredServerConfig,
): Promise<McpServerRecord> {
  const { name, previous } = target;
  try {
    let saved = await deps.servers.upsertConfig(caller.account, name, stored, trx);
    saved = await changePin(caller, trx, previous, saved);
    await recordAudit(trx, {
      ...auditBy(caller),
      action: 'SetMcpServer',
      target: { kind: 'server', name },
      before: auditServer(previous),
      after: auditServer(saved),
    });
    return saved;
  } catch (err) {
    if ((err as { code?: string }).code === '23514') {
      throw new WireError(ErrorCodes.invalidInput, 'config.url: plain http is not allowed for this host', {
        field: 'config.url',
      });
    }
    throw err;
  }
}

/** `config.pin` taken out of SetMcpServer's config (the rest is validated as before). */
function takePin(config: unknown): { pin: PinMode | undefined; rest: unknown } {
  if (config === null || typeof config !== 'object' || Array.isArray(config) || !('pin' in config))
    return { pin: undefined, rest: config };
  const { pin, ...rest } = config as Record<string, unknown>;
  if (pin === undefined) return { pin: undefined, rest };
  if (!isPinMode(pin))
    throw new WireError(ErrorCodes.invalidInput, 'config.pin: must be off, review or strict', { field: 'config.pin' });
  return { pin, rest };
}

/**
 * A pin that changes with this SetMcpServer: turned on for a server that was listed, its current
 * tools (what agents have now) are the accepted contracts, by the signer who pinned it (never
 * listed yet: its first listing is, as for a new server); turned
 * off, its contracts and held changes go (the discovery that follows records the list as it is);
 * from one mode to the other, the next discovery evaluates its list again.
 */
async function changePin(
  caller: Caller,
  trx: Kysely<Database>,
  previous: McpServerRecord | null,
  saved: McpServerRecord,
): Promise<McpServerRecord> {
  const before = previous === null ? 'off' : pinModeOf(previous.config);
  const after = pinModeOf(saved.config);
  // A new server's first pinned discovery is its baseline (trust on first use).
  if (before === after || previous === null) return saved;
  if (after === 'off') {
    await clearPins(trx, caller.account, saved.id);
  } else if (before === 'off' && previous !== null) {
    const actor = { signer: caller.signer, role: caller.role };
    await acceptContracts(trx, caller.account, saved.id, saved.tools, actor);
    await trx
      .updateTable('registry.mcp_servers')
      .set({ discovered_cbor: DiscoveredToolsColumn.encode(saved.tools), discovered_hash: saved.toolsHash })
      .where('account_id', '=', caller.account)
      .where('id', '=', saved.id)
      .execute();
    await recordAudit(trx, {
      account: caller.account,
      ...actor,
      action: 'PinBaseline',
      target: { kind: 'server', name: saved.name },
      after: { pin: after, tools: saved.tools.map((t) => ({ name: t.name, cid: contractCid(t) })).slice(0, 1000) },
    });
  } else {
    await trx
      .updateTable('registry.mcp_servers')
      .set({ discovered_hash: 'mode-changed' })
      .where('account_id', '=', caller.account)
      .where('id', '=', saved.id)
      .execute();
  }
  const row = await trx
    .selectFrom('registry.mcp_servers')
    .selectAll()
    .where('account_id', '=', caller.account)
    .where('id', '=', saved.id)
    .executeTakeFirstOrThrow();
  return toRecord(row);
}

/**
 * The pre-registered OAuth client as the config keeps it: its id and grant, which credential is
 * sealed with the OAuth state (never its value). Not given again on an update, the stored one stays.
 */
function oauthClientConfig(
  auth: string | undefined,
  given: PreRegisteredClient | undefined,
  previous: StoredServerConfig | undefined,
): Pick<StoredServerConfig, 'oauthClient'> {
  if (auth !== 'oauth') return {};
  if (given !== undefined) return { oauthClient: storedOAuthClient(given) };
  return previous?.oauthClient !== undefined ? { oauthClient: previous.oauthClient } : {};
}

export const refreshMcpServer: ServersAction<'RefreshMcpServer'> = async (deps, caller, action) => {
  const name = validateServerNameInput(action.name, deps.style);
  const builtins = deps.builtins;
  const builtin = await builtins?.find(caller.account, name);
  // The overrides the answer shows are read before the discovery records: Postgres lost after the
  // record cannot answer "not run" for a discovery that was stored.
  if (builtins && builtin) {
    const overrides = await deps.permissions.forServer(caller.account, builtin.id);
    const refreshed = await builtins.refresh(builtin);
    return { server: redactServer(refreshed, deps.style, overrides, { builtin: true, role: caller.role }) };
  }
  const server = await deps.servers.find(caller.account, name);
  if (server === null) throw new WireError(ErrorCodes.notFound, `name: no MCP server named ${name}`, { field: 'name' });
  const overrides = await deps.permissions.forServer(caller.account, server.id);
  const discovered = await deps.discovery.discover(server, 'refresh');
  return withAuthorization(deps, discovered, async (s) =>
    redactServer(s, deps.style, overrides, { role: caller.role }),
  );
};

/**
 * Deletes the record and the header secrets it owns, removes the name from every agent's grant
 * (each agent's change is an event), then tells the projector to drop the documents.
 */
export const deleteMcpServer: ServersAction<'DeleteMcpServer'> = async (deps, caller, action) => {
  const name = validateServerNameInput(action.name, deps.style);
  await deps.outbox.commit(async (trx, emit) => {
    const found = await deps.servers.lock(caller.account, name, trx);
    if (found !== null) await guardDelete(deps, caller, trx, found);
    const deleted = await deps.servers.delete(caller.account, name, trx);
    if (deleted === null)
      throw new WireError(ErrorCodes.notFound, `name: no MCP server named ${name}`, { field: 'name' });
    await recordAudit(trx, {
      ...auditBy(caller),
      action: 'DeleteMcpServer',
      target: { kind: 'server', name },
      before: auditServer(deleted),
      after: null,
    });
    await deps.secrets.deleteNamed(caller.account, ownedSecretNames(name, deleted.config), trx);
    const granting = await deps.agents.grantingServer(caller.account, name, trx);
    const agents = [];
    for (const agent of granting) {
      agents.push(
        await deps.agents.update(
          caller.account,
          agent.id,
          { mcpServers: agent.definition.mcpServers.filter((s) => s !== name) },
          trx,
        ),
      );
    }
    // The events are committed with the change (the outbox): the agents' first, then the server's.
    emit(
      ...agents.map((a) => agentChangedEvent(deps, a)),
      serverDeleted(deps.bus.subjects, caller.account, name, deleted.id),
    );
  });
  return { name };
};
