import { INPUT_REQUEST_ID_RE, PAYLOAD_LIMITS, decodeStrict, invalidInput, type ProxyCallRequest, type StrictLimits } from '@mcpx/contracts';

/** A call may take at most 120 s (docs/limits.md#the-call). */
export const MAX_CALL_TIMEOUT_MS = 120_000;
/**
 * A call request bigger than this is refused before it is decoded (NATS' default max payload is
 * 1 MiB; a server configured larger must not let one request pin the proxy's memory).
 */
export const MAX_REQUEST_BYTES = 1024 * 1024;
/** The strict decoder's limits for a call request: the payload limits, held to {@link MAX_REQUEST_BYTES}. */
export const CALL_REQUEST_LIMITS: StrictLimits = { ...PAYLOAD_LIMITS, maxBytes: MAX_REQUEST_BYTES };

const ID_RE = /^[A-Za-z0-9_-]{1,128}$/;

function requireId(v: unknown, field: string): string {
  if (typeof v !== 'string' || !ID_RE.test(v)) throw invalidInput(field, 'must be 1-128 letters, digits, _ or -');
  return v;
}

/**
 * Decodes a call request's bytes with the one strict decoder (`decodeStrict`: DAG-CBOR rules,
 * bounded size and depth, {@link CALL_REQUEST_LIMITS}), then checks its shape: a typed
 * `invalid_input` naming `request` (with the broken rule) or the first bad field, never a crash.
 */
export function decodeCallRequest(data: Uint8Array): ProxyCallRequest {
  return parseCallRequest(decodeStrict(data, 'request', CALL_REQUEST_LIMITS));
}

/** Checks the shape of a decoded call request, naming the first bad field. */
export function parseCallRequest(raw: unknown): ProxyCallRequest {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw invalidInput('request', 'must be a map');
  const r = raw as Record<string, unknown>;
  const args = r.arguments ?? {};
  if (args === null || typeof args !== 'object' || Array.isArray(args) || args instanceof Uint8Array) {
    throw invalidInput('arguments', 'must be an object');
  }
  if (r.timeoutMs !== undefined && (typeof r.timeoutMs !== 'number' || !Number.isFinite(r.timeoutMs) || r.timeoutMs <= 0)) {
    throw invalidInput('timeoutMs', 'must be a positive number of milliseconds');
  }
  if (typeof r.tool !== 'string' || r.tool === '' || r.tool.length > 128) throw invalidInput('tool', 'must name a tool');
  const req: ProxyCallRequest = {
    account: requireId(r.account, 'account'),
    agent: requireId(r.agent, 'agent'),
    run: requireId(r.run, 'run'),
    callId: requireId(r.callId, 'callId'),
    tool: r.tool,
    arguments: args as Record<string, unknown>,
  };
  if (typeof r.timeoutMs === 'number') req.timeoutMs = Math.min(r.timeoutMs, MAX_CALL_TIMEOUT_MS);
  if (r.approvalId !== undefined && r.approvalId !== null) req.approvalId = requireId(r.approvalId, 'approvalId');
  // The server's requestState is kept sealed by the proxy; a caller never supplies one.
  if (r.requestState !== undefined) throw invalidInput('requestState', "is never taken from a caller: the proxy keeps the server's state and sends it back itself (re-send with inputRequestId)");
  if (r.inputRequestId !== undefined && r.inputRequestId !== null) {
    if (typeof r.inputRequestId !== 'string' || !INPUT_REQUEST_ID_RE.test(r.inputRequestId)) throw invalidInput('inputRequestId', 'must be an input request id (inp_…)');
    req.inputRequestId = r.inputRequestId;
  }
  if (r.inputResponses !== undefined && r.inputResponses !== null) {
    const v = r.inputResponses;
    if (typeof v !== 'object' || Array.isArray(v) || v instanceof Uint8Array) throw invalidInput('inputResponses', 'must be a map of answers by request key');
    if (req.inputRequestId === undefined) throw invalidInput('inputResponses', 'goes with the inputRequestId it answers');
    req.inputResponses = v as Record<string, unknown>;
  }
  if (r.answers !== undefined && r.answers !== null) {
    const a = r.answers as Record<string, unknown>;
    if (typeof a !== 'object' || Array.isArray(a) || a instanceof Uint8Array) throw invalidInput('answers', 'must be {sampling?, forms?}');
    for (const k of ['sampling', 'forms'] as const) {
      if (a[k] !== undefined && typeof a[k] !== 'boolean') throw invalidInput(`answers.${k}`, 'must be a boolean');
    }
    req.answers = { ...(a.sampling === true ? { sampling: true } : {}), ...(a.forms === true ? { forms: true } : {}) };
  }
  return req;
}
