import { decodePayload, type WireErrorShape } from '@mcpx/contracts';
import type { ProxyResult } from '@mcpx/domain';
import { McpClientError, McpClientErrorCode, ProtocolError } from '@mcpx/mcp-client';

/** What `tasks/result` of a finished task holds: the call's reply as the caller would have had it. */
export type StoredOutcome = { ok: true; result: ProxyResult } | { ok: false; error: WireErrorShape };

/** `details.reason` of a task whose tool ran and answered `isError`: the task `completed`, its result the tool's error. */
export const TOOL_ERROR = 'tool_error';

/** Whether an outcome is a tool's own error (it ran, and said `isError`): its task completed; any other error ends it `failed`. */
export function toolError(outcome: StoredOutcome): boolean {
  return !outcome.ok && outcome.error.details?.reason === TOOL_ERROR;
}

/** A stored outcome, read back. */
export function readOutcome(bytes: Uint8Array): StoredOutcome {
  return decodePayload<StoredOutcome>(bytes);
}

/** Whether a poll's failure says the server no longer knows the task: its session is gone, or it answers the id is unknown (-32602). */
export function lostTask(err: unknown): boolean {
  if (err instanceof McpClientError && err.code === McpClientErrorCode.SessionExpired) return true;
  return err instanceof ProtocolError && err.code === -32602;
}
