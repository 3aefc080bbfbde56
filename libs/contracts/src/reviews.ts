import type { ContractDiff, ContractWarning, ToolContract } from '@mcpx/domain';

/**
 * What `ListToolChanges` answers for each held change of a pinned server, and what
 * `ListAuditEvents` answers for each entry: one shape for the registry that writes them and the
 * CLI and console that read them.
 */

/** One held change as `ListToolChanges` shows it. */
export interface ToolChangeView {
  server: string;
  /** The remote tool name. */
  tool: string;
  /** The name agents know it by. */
  toolName: string;
  kind: 'new' | 'changed';
  status: 'pending' | 'rejected';
  /** The held contract's CID: what `AcceptToolChange` names. */
  cid: string;
  previousCid?: string;
  /** Agents keep the accepted contract meanwhile (review mode, compatible input); else the tool is withheld. */
  withheld: boolean;
  compatible: boolean;
  /** Why the new input schema is not compatible with the accepted one. */
  incompatibility?: string[];
  /** The CID of the document agents will get once it is accepted. */
  documentCid?: string;
  pin: 'review' | 'strict';
  detectedAt: string;
  decidedBy?: string;
  decidedAt?: string;
  before?: ToolContract;
  after: ToolContract;
  diff: ContractDiff;
  /** What a reviewer should look at (never used to decide). */
  warnings: ContractWarning[];
}

/** One entry of the account's audit log as `ListAuditEvents` shows it (never a secret). */
export interface AuditEventView {
  id: string;
  at: string;
  signer: string;
  role: string;
  action: string;
  target: { kind: string; name: string };
  before?: unknown;
  after?: unknown;
}

/** The most held changes one review-requested notification names (the rest wait in `ListToolChanges`). */
export const REVIEW_CHANGES_MAX = 100;

/**
 * Payload of `mcp.reviews.requested.<acct>` (core NATS, at most once): which tools of which server
 * wait for a reviewer. A notification only: `ListToolChanges` is the source of truth.
 */
export interface ToolReviewRequestedEvent {
  account: string;
  server: string;
  /** At most {@link REVIEW_CHANGES_MAX}: per held tool its remote name, held CID, kind and whether agents are without it meanwhile. */
  changes: Array<{ tool: string; cid: string; kind: 'new' | 'changed'; withheld: boolean }>;
  /** The server's held changes pending a decision, all of them (not only those named here). */
  pending: number;
}
