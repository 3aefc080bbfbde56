import { ErrorCodes, INPUT_REQUEST_ID_RE, type WireError } from '@mcpx/contracts';
import { ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server';

/**
 * The `requestState` a client echoes with a retry (2026-07-28 `input_required`, SEP-2322). This
 * endpoint gives a client one of two states: an input request's id (the server's own state stays
 * sealed in the proxy, bound to the token's run, the tool or prompt and its arguments) or a sealed
 * approval question (user-approvals.ts). Anything else, and one of ours that the proxy will not
 * take (another token's, used, expired, altered), is refused as a server refuses a state that
 * fails its integrity check: a JSON-RPC error (-32602, InvalidParams) naming `requestState`, with
 * the connector's code and reason in `data`. Nothing is sent on, nothing runs, and the client's
 * state never reaches the server.
 */

/** The proxy's refusals of an input request that mean the echoed state is not (or no longer) good. */
const STATE_REASONS = new Set(['unknown', 'expired', 'used', 'mismatch', 'tampered']);

/** Whether a client's `requestState` is shaped as one of this endpoint's input request ids. */
export function isInputState(state: unknown): state is string {
  return typeof state === 'string' && INPUT_REQUEST_ID_RE.test(state);
}

/** The refusal of a `requestState` that this endpoint never gives (not an input request id, not an approval state). */
export function foreignState(): ProtocolError {
  return new ProtocolError(
    ProtocolErrorCode.InvalidParams,
    'requestState: not a state this endpoint gave (it was altered, or is another server’s)',
    {
      code: ErrorCodes.invalidInput,
      details: { field: 'requestState', reason: 'unknown' },
    },
  );
}

/** The proxy's refusal of an echoed input request id as the JSON-RPC error a client expects; undefined for any other failure. */
export function stateRefusal(wire: WireError): ProtocolError | undefined {
  if (wire.code !== ErrorCodes.inputRefused || !STATE_REASONS.has(String(wire.details.reason))) return undefined;
  return new ProtocolError(ProtocolErrorCode.InvalidParams, `requestState: ${wire.message}`, {
    code: wire.code,
    details: { ...wire.details, field: 'requestState' },
  });
}
