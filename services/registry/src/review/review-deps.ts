import type { Bus } from '@mcpx/bus';
import type { ActionType } from '@mcpx/contracts';
import type { Db } from '@mcpx/db';
import type { ToolNameStyle } from '@mcpx/domain';
import type { ApprovalStore, InputStore } from '@mcpx/shared-state';
import type { Logger } from '@mcpx/log';
import type { McpServersRepository } from '../catalog/mcp-servers.repository.js';
import type { ToolPermissionsRepository } from '../catalog/tool-permissions.repository.js';
import type { EventOutbox } from '../events/outbox.js';
import type { HeldEntries } from '../audit/held-entries.js';
import type { ActionHandler } from '../shared/action-handler.js';

/** How contract pinning is set (`PIN_DEFAULT`, `PIN_WRITERS_MAY_REVIEW`). */
export interface PinSettings {
  /** The pin mode of a new server that names none. */
  defaultMode: 'off' | 'review' | 'strict';
  /** Whether WRITER signers may accept or reject tool changes. */
  writersMayReview: boolean;
}

/** What the review room's actions use: held tool changes, approvals and input requests, and the servers they belong to. */
export interface ReviewDeps {
  db: Db;
  /** The transactions held open across Redis's answer (a decision, an answer), bounded. */
  heldEntries: HeldEntries;
  servers: McpServersRepository;
  /** The owner's per-tool permission overrides. */
  permissions: ToolPermissionsRepository;
  bus: Bus;
  log: Logger;
  style: ToolNameStyle;
  outbox: EventOutbox;
  /** Approvals of always_ask calls (Redis, shared with the proxy). */
  approvals: ApprovalStore;
  /** Input requests of calls whose servers asked a question (Redis, shared with the proxy); absent: none are answered here. */
  inputs?: InputStore;
  /** Contract pinning. Absent: off, OWNERs only review. */
  pins?: PinSettings;
}

/** The handler of a review action. */
export type ReviewAction<T extends ActionType> = ActionHandler<T, ReviewDeps>;
