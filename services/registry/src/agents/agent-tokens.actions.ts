import { ErrorCodes, WireError, invalidInput } from '@mcpx/contracts';
import { auditBy, recordAudit } from '../audit/audit-log.js';
import { AgentTokensRepository, tokenView } from './agent-tokens.repository.js';
import { findAgent } from './agents.actions.js';
import type { AgentsAction } from './agents-deps.js';

/** Active (neither revoked nor expired) tokens one agent may hold at once. */
export const MAX_ACTIVE_AGENT_TOKENS = 20;
/** The longest life a token may be given (ten years); none given: it lives until revoked. */
export const MAX_TOKEN_DAYS = 3650;
const DAY_MS = 86_400_000;

/** The token's name (its grammar is the action map's): not blank. */
function tokenName(value: string | undefined): string {
  if (value === undefined) return 'token';
  if (value.trim() === '') throw invalidInput('name', 'must be 1-64 letters, digits, spaces or ._:@()/+-');
  return value.trim();
}

function expiry(value: number | undefined, now: number): Date | null {
  if (value === undefined) return null;
  if (value <= 0 || value > MAX_TOKEN_DAYS)
    throw invalidInput('expiresInDays', `must be a number of days above 0 and at most ${MAX_TOKEN_DAYS}`);
  return new Date(now + Math.round(value * DAY_MS));
}

/**
 * `CreateAgentToken {agent, name?, expiresInDays?, userMayApprove?}` → `{token, ...AgentTokenView}`:
 * a bearer token of the agent's MCP endpoint. With `userMayApprove: true` its holder (the MCP
 * client's user) may approve the token's own always_ask calls when the endpoint asks (an
 * elicitation), instead of waiting for the owner; the owner may still decide them first. The token is in this answer and nowhere else (only its
 * SHA-256 is stored); at most {@link MAX_ACTIVE_AGENT_TOKENS} active ones per agent. OWNER only.
 */
export const createAgentToken: AgentsAction<'CreateAgentToken'> = async (deps, caller, action) => {
  const agent = await findAgent(deps, caller.account, action.agent);
  const name = tokenName(action.name);
  const now = Date.now();
  const expiresAt = expiry(action.expiresInDays, now);
  const mayApprove = action.userMayApprove ?? false;
  const tokens = new AgentTokensRepository(deps.db);
  const { token, row } = await deps.db.transaction().execute(async (trx) => {
    // One writer per agent at a time, so two concurrent creations cannot both pass the count.
    await trx
      .selectFrom('registry.agents')
      .select('id')
      .where('account_id', '=', caller.account)
      .where('id', '=', agent.id)
      .forUpdate()
      .executeTakeFirst();
    const active = await tokens.countActive(caller.account, agent.id, trx);
    if (active >= MAX_ACTIVE_AGENT_TOKENS) {
      throw new WireError(
        ErrorCodes.quotaExceeded,
        `agent: ${agent.name} already has ${active} active tokens (revoke one first)`,
        {
          field: 'agent',
          limit: 'agentTokens',
          max: MAX_ACTIVE_AGENT_TOKENS,
        },
      );
    }
    const created = await tokens.create(caller.account, agent.id, name, expiresAt, trx, { userMayApprove: mayApprove });
    // A token reaches the agent's tools from outside (and may approve its calls): audited with it, by id, never the token.
    await recordAudit(trx, {
      ...auditBy(caller),
      action: 'CreateAgentToken',
      target: { kind: 'token', name: created.row.id },
      before: null,
      after: { agent: agent.name, name, expiresAt: expiresAt?.toISOString() ?? null, userMayApprove: mayApprove },
    });
    return created;
  });
  deps.log.info('agent token issued', {
    account: caller.account,
    agent: agent.id,
    token: row.id,
    userMayApprove: mayApprove,
  });
  return { token, ...tokenView(row, agent.name, now) };
};

/** `ListAgentTokens {agent}` → `{agent, tokens}`: newest first, with their state; never a token or a hash. OWNER only. */
export const listAgentTokens: AgentsAction<'ListAgentTokens'> = async (deps, caller, action) => {
  const agent = await findAgent(deps, caller.account, action.agent);
  const rows = await new AgentTokensRepository(deps.db).list(caller.account, agent.id);
  const now = Date.now();
  return { agent: agent.name, tokens: rows.map((r) => tokenView(r, agent.name, now)) };
};

/**
 * `RevokeAgentToken {id}` → `{id, revoked}`: the endpoint refuses the token from the moment this
 * answers (`revoked: false` when it was revoked already). An id the account does not hold is
 * `not_found`. OWNER only.
 */
export const revokeAgentToken: AgentsAction<'RevokeAgentToken'> = async (deps, caller, action) => {
  const id = action.id;
  // A second revoke changes nothing and records nothing; a revocation's entry commits with it
  // (Postgres lost at the entry revokes nothing, and the answer's `unavailable` is true).
  const { found, revoked } = await new AgentTokensRepository(deps.db).revoke(caller.account, id, (trx) =>
    recordAudit(trx, {
      ...auditBy(caller),
      action: 'RevokeAgentToken',
      target: { kind: 'token', name: id },
      before: { revoked: false },
      after: { revoked: true },
    }),
  );
  if (!found) throw new WireError(ErrorCodes.notFound, `id: no token ${id}`, { field: 'id' });
  deps.log.info('agent token revoked', { account: caller.account, token: id, revoked });
  return { id, revoked };
};
