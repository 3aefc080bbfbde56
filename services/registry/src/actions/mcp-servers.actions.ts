import { ErrorCodes, WireError, type ServerDeletedEvent } from '@mcpx/contracts';
import type { StoredServerConfig } from '../repositories/mcp-servers.repository.js';
import { redactServer } from '../redaction.js';
import { headerSecretName, ownedSecretNames } from '../server-headers.js';
import { keepsStoredHeader, withBearerToken } from '../auth-config.js';
import { refuseBuiltinSlug } from '../builtin-names.js';
import { validateServerConfig, validateServerNameInput } from '../validation.js';
import { publishAgentChanged } from './agents.actions.js';
import { storedOAuthClient, validatePreRegisteredClient, type PreRegisteredClient } from '../oauth/oauth-client-config.js';
import { withAuthorization } from './oauth.actions.js';
import type { ActionHandler } from './context.js';

export const listMcpServers: ActionHandler = async (deps, caller) => {
  // Three independent reads in one round trip's time (the list is the console's most frequent read).
  const [servers, overrides, builtins] = await Promise.all([deps.servers.list(caller.account), deps.permissions.forAccount(caller.account), deps.builtins?.lit(caller.account) ?? []]);
  return { servers: [...servers.map((s) => redactServer(s, deps.style, overrides.get(s.id))), ...builtins.map((s) => redactServer(s, deps.style, overrides.get(s.id), { builtin: true }))] };
};

/** Creates or updates a server by name, then discovers. A failed discovery still saves. */
export const setMcpServer: ActionHandler = async (deps, caller, action) => {
  const name = validateServerNameInput(action.name, deps.style);
  const config = validateServerConfig(action.config, deps.outbound);
  const oauthClient = validatePreRegisteredClient((action.config as { oauth?: unknown }).oauth, config.auth);
  refuseBuiltinSlug(name);
  const refs = Object.values(config.secretRefs);
  const saved = await deps.db.transaction().execute(async (trx) => {
    const existing = await deps.secrets.existingNames(caller.account, refs, trx);
    for (const [header, ref] of Object.entries(config.secretRefs)) {
      if (!existing.has(ref)) throw new WireError(ErrorCodes.invalidInput, `config.secretRefs.${header}: no secret named ${ref}`, { field: `config.secretRefs.${header}` });
    }
    await deps.accounts.ensure(caller.account, trx);
    const previous = await deps.servers.find(caller.account, name, trx);
    // The bearer token is the server's `Authorization` secret header: sealed, never shown again.
    const sealed = withBearerToken(config, previous?.config);
    if (Object.keys(sealed).length > 0) {
      // `gh` + `X-Token` and `gh-x` + `Token` both make `mcp-gh-x-token`: never share one.
      const others = (await deps.servers.list(caller.account, trx)).filter((s) => s.name !== name);
      for (const header of Object.keys(sealed)) {
        const secretName = headerSecretName(name, header);
        const owner = others.find((o) => Object.values(o.config.secretRefs ?? {}).includes(secretName));
        if (owner !== undefined) {
          throw new WireError(ErrorCodes.conflict, `config.secretHeaders.${header}: its secret name ${secretName} is used by server ${owner.name}`, {
            field: `config.secretHeaders.${header}`,
          });
        }
      }
    }
    const secretRefs: Record<string, string> = { ...config.secretRefs };
    // Secret headers given again are re-sealed; ones not given again keep their stored value.
    for (const [header, ref] of Object.entries(previous?.config.secretRefs ?? {})) {
      if (!(header in secretRefs) && !(header in config.headers) && ref === headerSecretName(name, header) && keepsStoredHeader(header, config, previous?.config)) secretRefs[header] = ref;
    }
    for (const [header, value] of Object.entries(sealed)) {
      const secretName = headerSecretName(name, header);
      await deps.secrets.put(caller.account, secretName, value, trx);
      secretRefs[header] = secretName;
    }
    // Secrets this server owned that its new config no longer uses go with the old config.
    const kept = new Set(Object.values(secretRefs));
    const dropped = previous ? ownedSecretNames(name, previous.config).filter((n) => !kept.has(n)) : [];
    await deps.secrets.deleteNamed(caller.account, dropped, trx);
    const stored: StoredServerConfig = {
      url: config.url,
      ...(config.transport ? { transport: config.transport } : {}),
      ...(Object.keys(config.headers).length > 0 ? { headers: config.headers } : {}),
      ...(Object.keys(secretRefs).length > 0 ? { secretRefs } : {}),
      ...(config.auth ? { auth: config.auth } : {}),
      ...oauthClientConfig(config.auth, oauthClient, previous?.config),
    };
    try {
      return await deps.servers.upsertConfig(caller.account, name, stored, trx);
    } catch (err) {
      if ((err as { code?: string }).code === '23514') {
        throw new WireError(ErrorCodes.invalidInput, 'config.url: plain http is not allowed for this host', { field: 'config.url' });
      }
      throw err;
    }
  });
  if (oauthClient !== undefined) await deps.oauth?.preRegister(saved, oauthClient);
  const discovered = await deps.discovery.discover(saved, 'set');
  return withAuthorization(deps, discovered, async (s) => redactServer(s, deps.style, await deps.permissions.forServer(caller.account, s.id)));
};

/**
 * The pre-registered OAuth client as the config keeps it: its id and grant, which credential is
 * sealed with the OAuth state (never its value). Not given again on an update, the stored one stays.
 */
function oauthClientConfig(auth: string | undefined, given: PreRegisteredClient | undefined, previous: StoredServerConfig | undefined): Pick<StoredServerConfig, 'oauthClient'> {
  if (auth !== 'oauth') return {};
  if (given !== undefined) return { oauthClient: storedOAuthClient(given) };
  return previous?.oauthClient !== undefined ? { oauthClient: previous.oauthClient } : {};
}

export const refreshMcpServer: ActionHandler = async (deps, caller, action) => {
  const name = validateServerNameInput(action.name, deps.style);
  const builtins = deps.builtins;
  const builtin = await builtins?.find(caller.account, name);
  if (builtins && builtin) {
    const refreshed = await builtins.refresh(builtin);
    return { server: redactServer(refreshed, deps.style, await deps.permissions.forServer(caller.account, refreshed.id), { builtin: true }) };
  }
  const server = await deps.servers.find(caller.account, name);
  if (server === null) throw new WireError(ErrorCodes.notFound, `name: no MCP server named ${name}`, { field: 'name' });
  const discovered = await deps.discovery.discover(server, 'refresh');
  return withAuthorization(deps, discovered, async (s) => redactServer(s, deps.style, await deps.permissions.forServer(caller.account, s.id)));
};

/**
 * Deletes the record and the header secrets it owns, removes the name from every agent's grant
 * (each agent's change is an event), then tells the projector to drop the documents.
 */
export const deleteMcpServer: ActionHandler = async (deps, caller, action) => {
  const name = validateServerNameInput(action.name, deps.style);
  const { deleted, agents } = await deps.db.transaction().execute(async (trx) => {
    const deleted = await deps.servers.delete(caller.account, name, trx);
    if (deleted === null) throw new WireError(ErrorCodes.notFound, `name: no MCP server named ${name}`, { field: 'name' });
    await deps.secrets.deleteNamed(caller.account, ownedSecretNames(name, deleted.config), trx);
    const granting = await deps.agents.grantingServer(caller.account, name, trx);
    const agents = [];
    for (const agent of granting) {
      agents.push(await deps.agents.update(caller.account, agent.id, { mcpServers: agent.definition.mcpServers.filter((s) => s !== name) }, trx));
    }
    return { deleted, agents };
  });
  for (const agent of agents) await publishAgentChanged(deps, agent);
  const event: ServerDeletedEvent = { account: caller.account, server: name, serverId: deleted.id };
  await deps.bus.publishEvent(deps.bus.subjects.serverDeleted(caller.account, name), event, `deleted-${deleted.id}`);
  return { name };
};
