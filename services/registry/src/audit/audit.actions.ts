import type { Db } from '@mcpx/db';
import type { ActionHandler } from '../shared/action-handler.js';
import { listAuditEvents, parseAuditQuery } from './audit-log.js';

/**
 * `ListAuditEvents {limit?, cursor?, action?, targetKind?, target?, signer?, since?, until?}` →
 * `{events, nextCursor?}`: the account's audit log, newest first, one page at a time (50 by
 * default, at most 200); `nextCursor` gives the next (older) page. OWNER only.
 */
export const listAuditEventsAction: ActionHandler<'ListAuditEvents', { db: Db }> = async (deps, caller, action) =>
  listAuditEvents(deps.db, caller.account, parseAuditQuery(action));
