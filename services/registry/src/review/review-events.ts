import { decodeToolReviewRequestedEvent, type ToolReviewRequestedEvent } from '@mcpx/contracts';

/**
 * A `tool-review-requested` notification as an event stream passes it on: the server, the pending
 * count, and per held tool its name, CID, kind and whether it is withheld; nothing else of the
 * payload (which anyone able to publish on the subject could have written). A malformed one is
 * refused by the decoder (`invalid_input` naming the field), which the stream's `listen` logs and drops.
 */
export function reviewEventData(bytes: Uint8Array): Omit<ToolReviewRequestedEvent, 'account'> {
  const e = decodeToolReviewRequestedEvent(bytes);
  return { server: e.server, pending: e.pending, changes: e.changes };
}
