import { decodePayload, type WireErrorShape } from '@mcpx/contracts';
import type { ProxyResult } from '@mcpx/domain';
import { McpClientError, McpClientErrorCode, ProtocolError } from '@mcpx/mcp-client';

/** What `tasks/result` of a finished task holds: the call's reply as the caller would have had it. */
export type StoredOutcome = { ok: true; result: ProxyResult } | { ok: false; error: WireErrorShape };

/** A stored outcome, read back. */
export function readOutcome(bytes: Uint8Array): StoredOutcome {
  return decodePayload<StoredOutcome>(bytes);
}

/** Whether a poll's failure says the server no longer knows the task: its session is gone, or it answers the id is unknown (-32602). */
export function lostTask(err: unknown): boolean {
  if (err instanceof McpClientError && err.code === McpClientErrorCode.SessionExpired) return true;
  return err instanceof ProtocolError && err.code === -32602;
}
