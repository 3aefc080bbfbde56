import { CONTENT_MAX_BLOCKS, type ContentBlock, type ProxyImage, type ProxyResult } from '@mcpx/domain';
import { decodeStrict, encodePayload } from './codec.js';
import { invalidInput } from './errors.js';
import {
  absentOrNull,
  anyMap,
  anyStr,
  anything,
  bool,
  checkedMap,
  isMap,
  list,
  matching,
  num,
  optional,
  refused,
  shape,
  str,
  type Rule,
} from './field-rules.js';
import { INPUT_REQUEST_ID_RE } from './inputs.js';
import { logLevel } from './call-log.js';
import type { ProxyCallRequest } from './payloads.js';
import { PAYLOAD_LIMITS, StrictRules, type StrictLimits } from './strict-cbor.js';
import { boundInField, checkValueBounds } from './value-bounds.js';

/**
 * The proxy's call on the wire, both ways: the request the proxy decodes (`decodeCallRequest`)
 * and the result a caller reads from its reply (`proxyResultValue`), in the field rules of the
 * payload decoders. Both run once per call: neither copies what it checks deeper than the
 * request's top level.
 */

/** A call may take at most 120 s (docs/limits.md#the-call). */
export const MAX_CALL_TIMEOUT_MS = 120_000;

/**
 * The runs of the agent MCP endpoint: `ep-<token id>`, one per bearer token, to which the approvals
 * a token's user may decide are bound. Reserved for the endpoint: the registry's `InvokeTool` and
 * `EndRun` refuse them (`invalid_input` naming `run`), and so does a runtime's proxy client, so no
 * signer or runtime can use (or end) an endpoint client's approvals and runs.
 */
export const ENDPOINT_RUN_PREFIX = 'ep-';
/**
 * A call request bigger than this is refused before it is decoded (NATS' default max payload is
 * 1 MiB; a server configured larger must not let one request pin the proxy's memory).
 */
export const MAX_REQUEST_BYTES = 1024 * 1024;
/** The strict decoder's limits for a call request: the payload limits, held to {@link MAX_REQUEST_BYTES}. */
export const CALL_REQUEST_LIMITS: StrictLimits = { ...PAYLOAD_LIMITS, maxBytes: MAX_REQUEST_BYTES };

const id = matching(/^[A-Za-z0-9_-]{1,128}$/, '1-128 letters, digits, _ or -');

/** A map of the caller's, kept as sent (its values are the remote server's to check). */
export function mapSaying(says: string): Rule<Record<string, unknown>> {
  return (v, field) => {
    if (!isMap(v)) throw invalidInput(field, says);
    return v;
  };
}

const toolName: Rule<string> = (v, field) => {
  if (typeof v !== 'string' || v === '' || v.length > 128) throw invalidInput(field, 'must name a tool');
  return v;
};

/** The tool's arguments: absent or null is none. */
const callArguments: Rule<Record<string, unknown>> = (v, field) =>
  v === undefined || v === null ? {} : mapSaying('must be an object')(v, field);

/** A positive timeout, held to {@link MAX_CALL_TIMEOUT_MS}. */
const callTimeout: Rule<number | undefined> = (v, field) => {
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0)
    throw invalidInput(field, 'must be a positive number of milliseconds');
  return Math.min(v, MAX_CALL_TIMEOUT_MS);
};

const answerFlags = shape({
  sampling: optional(bool),
  forms: optional(bool),
  roots: optional(bool),
  tasks: optional(bool),
});
/** What the runtime answers itself: only the flags that are `true` are kept (a relayed request's too). */
export const answers: Rule<{ sampling?: boolean; forms?: boolean; roots?: boolean; tasks?: boolean }> = (v, field) => {
  if (!isMap(v)) throw invalidInput(field, 'must be {sampling?, forms?, roots?, tasks?}');
  const a = answerFlags(v, field);
  return {
    ...(a.sampling === true ? { sampling: true } : {}),
    ...(a.forms === true ? { forms: true } : {}),
    ...(a.roots === true ? { roots: true } : {}),
    ...(a.tasks === true ? { tasks: true } : {}),
  };
};

/** How long a task-augmented call waits for its task (0 to the call bound). */
const taskWait: Rule<number> = (v, field) => {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0)
    throw invalidInput(field, 'must be a whole number of milliseconds, 0 or more');
  return Math.min(v, MAX_CALL_TIMEOUT_MS);
};

/** A flag the caller sets (`content`: the server's content whole; `progress`: its progress); `false` is the same as absent. */
const wantsContent: Rule<true | undefined> = (v, field) => (bool(v, field) ? true : undefined);

/** The request's fields, in the order they are checked (the first bad one is named). */
const callRequestFields = shape({
  arguments: callArguments,
  timeoutMs: callTimeout,
  tool: toolName,
  account: id,
  agent: id,
  run: id,
  callId: id,
  approvalId: absentOrNull(id),
  // The server's requestState is kept sealed by the proxy; a caller never supplies one.
  requestState: refused(
    "is never taken from a caller: the proxy keeps the server's state and sends it back itself (re-send with inputRequestId)",
  ),
  inputRequestId: absentOrNull(matching(INPUT_REQUEST_ID_RE, 'an input request id (inp_…)')),
  inputResponses: absentOrNull(mapSaying('must be a map of answers by request key')),
  answers: absentOrNull(answers),
  content: absentOrNull(wantsContent),
  progress: absentOrNull(wantsContent),
  // The server's log messages at this level and above, while the call runs (docs/endpoint.md#logging).
  logLevel: absentOrNull(logLevel),
  // Asks for a task-augmented call of a tool whose task support is `optional` (docs/tasks.md).
  task: absentOrNull(wantsContent),
  taskWaitMs: absentOrNull(taskWait),
});

/**
 * Checks the shape of a decoded call request, naming the first bad field: a new request holding
 * only the fields it names (`arguments` and `inputResponses` kept as sent).
 */
export function parseCallRequest(raw: unknown): ProxyCallRequest {
  if (!isMap(raw)) throw invalidInput('request', 'must be a map');
  const req = callRequestFields(raw, '');
  if (req.inputResponses !== undefined && req.inputRequestId === undefined)
    throw invalidInput('inputResponses', 'goes with the inputRequestId it answers');
  return req;
}

/**
 * Decodes a call request's bytes with the one strict decoder (`decodeStrict`: DAG-CBOR rules,
 * bounded size and depth, {@link CALL_REQUEST_LIMITS}), then checks its shape: a typed
 * `invalid_input` naming `request` (with the broken rule) or the first bad field, never a crash.
 */
export function decodeCallRequest(data: Uint8Array): ProxyCallRequest {
  let raw: unknown;
  try {
    raw = decodeStrict(data, 'request', CALL_REQUEST_LIMITS);
  } catch (err) {
    // Too deep inside `arguments` names `arguments`, as the rest of the request's checks do.
    throw boundInField(err, 0);
  }
  return parseCallRequest(raw);
}

/**
 * Encodes a call request for the proxy, refusing (`invalid_input`, nothing sent) what the proxy
 * could not take: `arguments` or `inputResponses` past the depth or item bounds (checked before
 * encoding, which recurses), and a request larger than {@link MAX_REQUEST_BYTES} or the NATS
 * server's `maxPayload`, whichever is smaller, named by the larger of the two caller values. Each
 * refusal carries the bound in `details.limit`.
 */
export function encodeCallRequest(req: ProxyCallRequest, maxPayload: number = MAX_REQUEST_BYTES): Uint8Array {
  checkValueBounds(req.arguments, 'arguments', CALL_REQUEST_LIMITS);
  if (req.inputResponses !== undefined) checkValueBounds(req.inputResponses, 'inputResponses', CALL_REQUEST_LIMITS);
  const payload = encodePayload(req);
  const limit = Math.min(MAX_REQUEST_BYTES, maxPayload);
  if (payload.byteLength <= limit) return payload;
  const answers = req.inputResponses === undefined ? 0 : encodePayload(req.inputResponses).byteLength;
  const field = answers > payload.byteLength / 2 ? 'inputResponses' : 'arguments';
  throw invalidInput(field, `the call would be ${payload.byteLength} bytes, more than the ${limit} a call may be`, {
    rule: StrictRules.size,
    limit,
  });
}

const image: Rule<ProxyImage> = checkedMap({ data: anyStr, mimeType: anyStr });
/** A content block: a map with a `type`, its other fields the server's, kept as sent (the caller passes them on). */
const block: Rule<ContentBlock> = checkedMap({ type: anyStr });
/** `isError` is sent only when true. */
const trueOnly: Rule<true> = (v, field) => {
  if (v !== true) throw invalidInput(field, 'must be true when present');
  return true;
};

/**
 * The `result` of an `ok` call reply (docs/call.md#results): its fields checked in place and the
 * map kept as sent, no copy (the structured `result` is the server's, passed on unread). A field
 * that breaks its rule throws `invalid_input` naming it (`<field>.durationMs`,
 * `<field>.images[0].data`, `<field>.content[3].type`); the reader decides whose fault that is.
 */
export const proxyResultValue: Rule<ProxyResult> = checkedMap({
  summary: anyStr,
  argument: optional(anyStr),
  text: optional(anyStr),
  result: anything,
  images: optional(list(image)),
  // The whole content (asked with `content: true`): the blocks and a closing marker at most.
  content: optional(list(block, CONTENT_MAX_BLOCKS + 1)),
  isError: optional(trueOnly),
  meta: optional(anyMap),
  // A call that became a task and outlived the call bound (docs/tasks.md#the-handle).
  task: optional(checkedMap({ id: str, state: str, statusMessage: optional(anyStr) })),
  durationMs: num,
});
