/**
 * Held tool changes on the bus. What `ListToolChanges` and `ListAuditEvents` answer
 * (`ToolChangeView`, `AuditEventView`) is in ./action-views.ts.
 */

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
