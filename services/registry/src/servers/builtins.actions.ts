import { ErrorCodes, WireError, invalidInput } from '@mcpx/contracts';
import { builtinsOfVendor } from '@mcpx/domain';
import { auditBy, recordAudit } from '../audit/audit-log.js';
import { auditAgent } from '../agents/agent-audit.js';
import type { BuiltinServers } from '../builtins/builtin-servers.js';
import type { AgentRecord } from '../agents/agents.repository.js';
import type { VendorTokens } from '../credentials/vendor-connections.repository.js';
import type { ToolOverrides } from '../catalog/tool-permissions.repository.js';
import { redactServer } from './redaction.js';
import { agentChangedEvent } from '../agents/agents.actions.js';
import type { ServersAction, ServersDeps } from './servers-deps.js';
import { guardVendorDisconnect } from './override-guard.js';

const MAX_TOKEN_BYTES = 8192;

function builtinsOf(deps: ServersDeps): BuiltinServers {
  if (deps.builtins === undefined)
    throw new WireError(ErrorCodes.invalidInput, 'action.type: built-in servers are not enabled here', {
      field: 'action.type',
    });
  return deps.builtins;
}

/** A vendor some built-in server borrows its credential from. */
function validateVendor(vendor: string): string {
  if (builtinsOfVendor(vendor).length === 0)
    throw invalidInput(
      'vendor',
      `no built-in server uses the vendor ${vendor.replace(/[^a-z0-9_-]/gi, '').slice(0, 64)}`,
    );
  return vendor;
}

function token(value: unknown, field: string): string {
  if (typeof value !== 'string' || value === '') throw invalidInput(field, 'must be a non-empty string');
  if (/[\s\0]/.test(value)) throw invalidInput(field, 'must not contain whitespace or NUL');
  if (Buffer.byteLength(value, 'utf8') > MAX_TOKEN_BYTES)
    throw invalidInput(field, `must be at most ${MAX_TOKEN_BYTES} bytes`);
  return value;
}

/** Validates SetVendorConnection; every error names its field and never echoes a token. */
function validateTokens(action: Record<string, unknown>): VendorTokens {
  const tokens: VendorTokens = { accessToken: token(action.accessToken, 'accessToken') };
  if (action.refreshToken !== undefined) tokens.refreshToken = token(action.refreshToken, 'refreshToken');
  if (action.expiresAt !== undefined) {
    if (typeof action.expiresAt !== 'string' || Number.isNaN(Date.parse(action.expiresAt)))
      throw invalidInput('expiresAt', 'must be an ISO 8601 date');
    tokens.expiresAt = new Date(action.expiresAt).toISOString();
  }
  return tokens;
}

/**
 * `{vendor, accessToken, refreshToken?, expiresAt?}` → `{vendor, servers}`: stores the account's
 * connection to the vendor (tokens sealed, never shown again) and lights up its built-in servers,
 * whose tools reach the projector at once (their fallback list until they are discovered).
 */
export const setVendorConnection: ServersAction<'SetVendorConnection'> = async (deps, caller, action) => {
  const builtins = builtinsOf(deps);
  const vendor = validateVendor(action.vendor);
  const tokens = validateTokens(action);
  // The account's row (a first write creates it), the entry and the read of the answer's overrides
  // are in the connection's transaction: Postgres lost at any of them stores nothing (the
  // answer's `unavailable` is true).
  let overrides = new Map<string, ToolOverrides>();
  const servers = await builtins.connect(caller.account, vendor, tokens, {
    opening: (trx) => deps.accounts.ensure(caller.account, trx),
    recorded: async (lit, trx) => {
      // What changed, never a token: the vendor, its built-ins lit, whether a refresh token and an expiry came.
      await recordAudit(trx, {
        ...auditBy(caller),
        action: 'SetVendorConnection',
        target: { kind: 'vendor', name: vendor },
        after: {
          vendor,
          servers: lit.map((s) => s.name),
          refreshToken: tokens.refreshToken !== undefined,
          ...(tokens.expiresAt !== undefined ? { expiresAt: tokens.expiresAt } : {}),
        },
      });
      overrides = await deps.permissions.forAccount(caller.account, trx);
    },
  });
  return { vendor, servers: servers.map((s) => redactServer(s, deps.style, overrides.get(s.id), { builtin: true })) };
};

/**
 * `{vendor}` → `{vendor, servers}` (the slugs that went dark): deletes the connection, takes its
 * built-ins out of every agent's grant (each agent's change is an event) and drops their documents.
 */
export const deleteVendorConnection: ServersAction<'DeleteVendorConnection'> = async (deps, caller, action) => {
  const builtins = builtinsOf(deps);
  const vendor = validateVendor(action.vendor);
  const slugs = builtinsOfVendor(vendor).map((b) => b.slug);
  // The disconnect, the agents' changes and every event of them commit together (the outbox).
  await deps.outbox.commit(async (trx, emit) => {
    // A disconnect sheds the built-ins' overrides: only an OWNER may shed an always_ask one.
    await guardVendorDisconnect(deps, caller, trx, slugs);
    const connection = await builtins.removeConnection(caller.account, vendor, trx);
    if (connection === null)
      throw new WireError(ErrorCodes.notFound, `vendor: no connection to ${vendor}`, { field: 'vendor' });
    const agents: AgentRecord[] = [];
    const audit = {
      account: caller.account,
      signer: caller.signer,
      role: caller.role,
      action: 'DeleteVendorConnection',
    };
    for (const slug of slugs) {
      for (const agent of await deps.agents.grantingServer(caller.account, slug, trx)) {
        if (agents.some((a) => a.id === agent.id)) continue;
        const updated = await deps.agents.update(
          caller.account,
          agent.id,
          { mcpServers: agent.definition.mcpServers.filter((s) => !slugs.includes(s)) },
          trx,
        );
        agents.push(updated);
        // Each grant the disconnect took away, as an agent's change of its own.
        await recordAudit(trx, {
          ...audit,
          target: { kind: 'agent', name: updated.name },
          before: auditAgent(agent),
          after: auditAgent(updated),
        });
      }
    }
    await recordAudit(trx, {
      ...audit,
      target: { kind: 'vendor', name: vendor },
      before: { vendor, servers: slugs, connectedAt: connection.createdAt.toISOString() },
      after: null,
    });
    emit(
      ...agents.map((a) => agentChangedEvent(deps, a)),
      ...(await builtins.disconnected(caller.account, connection, trx)),
    );
  });
  return { vendor, servers: slugs };
};
