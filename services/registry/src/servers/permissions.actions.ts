import { ErrorCodes, WireError, type ActionResponse } from '@mcpx/contracts';
import { Permission, inheritPermission, normalizeAnnotations } from '@mcpx/domain';
import { serverDiscovered } from '../catalog/server-events.js';
import type { McpServerRecord } from '../catalog/mcp-servers.repository.js';
import type { ToolOverrides } from '../catalog/tool-permissions.repository.js';
import type { ServersAction } from './servers-deps.js';
import { auditBy, recordAudit } from '../audit/audit-log.js';

/**
 * `SetToolPermission {server, tool, permission}` → `{server, tool, permission, inherited,
 * overridden}`: the owner's level of one tool (its remote name), `act` or `always_ask`, or null
 * to go back to the level inherited from its annotations. OWNER only: it decides whether a human
 * stops the tool's calls.
 *
 * A permission is part of the tool's contract, so the change is published like a tool change:
 * the server's generation moves on (under the row's lock) and a discovery event carries the tools
 * and every override of the server; the projector rebuilds the documents (new CIDs). Setting the
 * same level again publishes again (the event is written with the commit, so none is lost after it). A lit built-in
 * works the same way (its override is keyed by its server id, so it lasts as long as the vendor
 * connection; its inherited level is the name heuristic's where annotations say nothing).
 */
export const setToolPermission: ServersAction<'SetToolPermission'> = async (deps, caller, action) => {
  const { server: name, tool, permission } = action;
  // The dispatch table already keeps this action to OWNERs; the handler holds the rule itself
  // too, so widening the table could only ever let others add a human, never take one away.
  if (caller.role !== 'OWNER' && permission !== Permission.always_ask) {
    throw new WireError(
      ErrorCodes.forbidden,
      `signer: only an OWNER may make a tool callable without a human (permission ${permission ?? 'inherited'})`,
      { field: 'signer' },
    );
  }
  const builtin = await deps.builtins?.find(caller.account, name);
  if (deps.builtins && builtin) {
    if (permission !== null && !builtin.tools.some((t) => t.name === tool))
      throw new WireError(ErrorCodes.notFound, `tool: the ${name} MCP server lists no tool ${tool}`, { field: 'tool' });
    // The entry commits with the override (as for a custom server below).
    const { saved, overrides } = await deps.builtins.setToolPermission(
      caller.account,
      builtin,
      tool,
      permission,
      (prior, trx) =>
        recordAudit(trx, {
          ...auditBy(caller),
          action: 'SetToolPermission',
          target: { kind: 'tool', name: `${name}/${tool}` },
          before: { permission: prior },
          after: { permission, builtin: true },
        }),
    );
    deps.log.info('tool permission set', {
      account: caller.account,
      server: name,
      tool,
      permission: permission ?? 'inherited',
      builtin: true,
    });
    return describe(saved, tool, overrides, true);
  }
  // The change and its event commit together (the outbox).
  const { saved, overrides } = await deps.outbox.commit(async (trx, emit) => {
    const before = await deps.servers.lock(caller.account, name, trx);
    if (before === null)
      throw new WireError(ErrorCodes.notFound, `server: no MCP server named ${name}`, { field: 'server' });
    if (permission !== null && !before.tools.some((t) => t.name === tool)) {
      throw new WireError(ErrorCodes.notFound, `tool: the ${name} MCP server lists no tool ${tool}`, { field: 'tool' });
    }
    const prior = (await deps.permissions.forServer(caller.account, before.id, trx))[tool] ?? null;
    await deps.permissions.set(caller.account, before.id, tool, permission, trx);
    const saved = await deps.servers.bumpGeneration(caller.account, before.id, trx);
    await recordAudit(trx, {
      ...auditBy(caller),
      action: 'SetToolPermission',
      target: { kind: 'tool', name: `${name}/${tool}` },
      before: { permission: prior },
      after: { permission },
    });
    const overrides = await deps.permissions.forServer(caller.account, before.id, trx);
    emit(serverDiscovered(deps.bus.subjects, saved, true, overrides));
    return { saved, overrides };
  });
  deps.log.info('tool permission set', {
    account: caller.account,
    server: name,
    tool,
    permission: permission ?? 'inherited',
  });
  return describe(saved, tool, overrides, false);
};

/** The answer: the tool's effective level, the level it inherits, and whether the owner overrode it. */
function describe(
  saved: McpServerRecord,
  tool: string,
  overrides: ToolOverrides,
  builtin: boolean,
): ActionResponse<'SetToolPermission'> {
  const remote = saved.tools.find((t) => t.name === tool);
  const inherited: Permission = inheritPermission(normalizeAnnotations(remote?.annotations), {
    builtin,
    toolName: tool,
  });
  const effective = overrides[tool] ?? inherited;
  return { server: saved.name, tool, permission: effective, inherited, overridden: Object.hasOwn(overrides, tool) };
}
