/**
 * What a failed endpoint call answers its client: the proxy's refusal shaped as MCP, a server's
 * questions passed on as `input_required`, an approval asked of the client, or a missing
 * capability as the 2026-07-28 error.
 */
import type { WireError } from '@mcpx/contracts';
import { ErrorCodes, type InputRequestItem } from '@mcpx/contracts';
import {
  inputRequired,
  MissingRequiredClientCapabilityError,
  ProtocolError,
  type CallToolResult,
  type InputRequiredResult,
} from '@modelcontextprotocol/server';
import { isModern, type ToolCallInput } from './call-input.js';
import type { AskedApproval } from './call-approvals.js';
import { isInputState, stateRefusal } from './input-states.js';
import { wireInputRequest } from './task-wire.js';

/** MCP 2026-07-28's MissingRequiredClientCapability. */
const MISSING_CAPABILITY = -32021;

/**
 * The proxy's `input_required` (every question addressed to the runtime, i.e. this client) as this
 * endpoint's own `input_required`: the same questions by key, and the input request id as the
 * `requestState` (the server's own state stays sealed in the proxy).
 */
export function passOnInputRequired(err: WireError): InputRequiredResult | undefined {
  const id = err.details.inputRequestId;
  const items = err.details.requests;
  if (typeof id !== 'string' || !Array.isArray(items) || items.length === 0) return undefined;
  const inputRequests: Record<string, { method: string; params: Record<string, unknown> }> = {};
  for (const q of items as InputRequestItem[]) {
    const wire = wireInputRequest(q);
    if (wire === undefined) return undefined;
    inputRequests[q.key] = wire;
  }
  return inputRequired({
    inputRequests: inputRequests as Parameters<typeof inputRequired>[0]['inputRequests'],
    requestState: id,
  });
}

/** What shaping a failed call needs of the call and of its endpoint. */
export interface FailedCall {
  input: ToolCallInput;
  /** The approval the call was sent with, if any. */
  approvalId: string | undefined;
  /** Asks the client the question of the approval the call waits for (call-approvals.ts). */
  ask: (approvalId: string) => Promise<AskedApproval | undefined>;
  /** The call's outcome, for its span and metrics. */
  outcome: { value: string };
  /** Sets a span attribute. */
  mark: (key: string, value: string) => void;
}

/**
 * The answer to a call the proxy refused (`wire`), or a throw for what MCP says as an error: a
 * `requestState` the proxy will not take, a capability the client did not declare. `undefined`:
 * a plain refusal, the caller's tool result.
 */
export async function failureAnswer(
  wire: WireError,
  call: FailedCall,
): Promise<CallToolResult | InputRequiredResult | undefined> {
  const { input, outcome } = call;
  // An echoed input request id the proxy will not take: refused as a state, not as a tool result.
  const badState = isInputState(input.requestState) ? stateRefusal(wire) : undefined;
  if (badState !== undefined) {
    outcome.value = wire.code;
    throw badState;
  }
  // Questions the client may answer itself go on to it as input_required (the SDK pushes
  // them as elicitation/create to a 2025 client); the owner's stay a tool result naming them.
  const passed =
    wire.code === ErrorCodes.inputRequired && wire.details.forPerson === false ? passOnInputRequired(wire) : undefined;
  if (passed !== undefined) {
    outcome.value = 'input_required';
    return passed;
  }
  // An approval the call waits for: asked of the client's user as a form when the token's
  // user may give it and the client answers forms; else, to a client that opens URL questions,
  // the console link where the owner decides it; else a refusal naming both.
  const waiting =
    wire.code === ErrorCodes.approvalRequired &&
    call.approvalId === undefined &&
    typeof wire.details.approvalId === 'string'
      ? wire.details.approvalId
      : undefined;
  if (waiting !== undefined) {
    const question = await call.ask(waiting);
    if (question !== undefined) {
      outcome.value = 'approval_asked';
      call.mark('mcpx.approval.asked', question.kind);
      return inputRequired(question.question as Parameters<typeof inputRequired>[0]);
    }
  }
  missingCapability(wire, input, outcome);
  return undefined;
}

/**
 * A 2026-07-28 client that declared no sampling, of a server that asks its model: the revision's
 * MissingRequiredClientCapability (-32021, HTTP 400), as the server says it directly; and the
 * server's own -32021 (told what this client declared, it asked for what the client lacks): an
 * error, as directly.
 */
function missingCapability(wire: WireError, input: ToolCallInput, outcome: { value: string }): void {
  if (!isModern(input.meta)) return;
  if (wire.code === ErrorCodes.inputRefused && wire.details.reason === 'sampling_unsupported') {
    outcome.value = 'missing_capability';
    throw new MissingRequiredClientCapabilityError({ requiredCapabilities: { sampling: {} } });
  }
  if (wire.code === ErrorCodes.serverError && wire.details.mcpCode === MISSING_CAPABILITY) {
    outcome.value = 'missing_capability';
    throw new ProtocolError(MISSING_CAPABILITY, wire.message);
  }
}
