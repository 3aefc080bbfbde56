import { decodeStrict, encodePayload } from './codec.js';
import { ErrorCodes, WireError, invalidInput, type WireErrorShape } from './errors.js';
import { absentOrNull, isMap, matching, oneOf, shape, type Rule } from './field-rules.js';
import { PAYLOAD_LIMITS, StrictRules, type StrictLimits } from './strict-cbor.js';
import { INPUT_REQUEST_ID_RE } from './inputs.js';
import { answers, mapSaying } from './proxy-call.js';
import { boundInField } from './value-bounds.js';

/**
 * The proxy's relay of a remote server's resources, prompts and completions (`mcp.proxy.relay`,
 * request/reply, queue group `proxy`): one request names the agent, its run, one granted server,
 * the MCP method and its params; the reply is the server's result, bounded
 * (docs/endpoint.md#resources-and-prompts). The proxy holds the connections and credentials, so
 * the endpoint never talks to a remote server itself.
 */

/** The MCP methods the proxy relays (tools/call has its own request, `mcp.proxy.call`). */
export const RELAY_METHODS = [
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'prompts/list',
  'prompts/get',
  'completion/complete',
] as const;
export type RelayMethod = (typeof RELAY_METHODS)[number];

export interface RelayRequest {
  account: string;
  agent: string;
  /** The caller's run (the endpoint's `ep-<token id>`): the pool whose connection serves it. */
  run: string;
  server: string;
  method: RelayMethod;
  /** The method's params, checked by {@link relayParams}. */
  params: Record<string, unknown>;
  timeoutMs?: number;
  /**
   * What the caller (the endpoint's client) answers itself, as it declared; for the methods where
   * a server may answer `input_required` ({@link INPUT_METHODS}) the server is told exactly these.
   */
  answers?: { sampling?: boolean; forms?: boolean; roots?: boolean };
  /** A re-sent request: the input request its answers go with (its server's state stays in the proxy). */
  inputRequestId?: string;
  inputResponses?: Record<string, unknown>;
}

/** The relayed methods a 2026-07-28 server may answer with `input_required` (SEP-2322). */
export const INPUT_METHODS: ReadonlySet<RelayMethod> = new Set(['prompts/get', 'resources/read']);

export type RelayReply =
  | { ok: true; instance: string; result: Record<string, unknown> }
  | { ok: false; instance: string; error: WireErrorShape };

/** A relay request is small: a name, a URI, a prompt's string arguments (docs/limits.md). */
export const MAX_RELAY_REQUEST_BYTES = 256 * 1024;
/** Nesting of a relay request: params hold maps of strings at most three deep (completion's `context.arguments`). */
export const RELAY_REQUEST_LIMITS: StrictLimits = {
  ...PAYLOAD_LIMITS,
  maxBytes: MAX_RELAY_REQUEST_BYTES,
  maxDepth: 6,
  maxItems: 1_000,
};
/** A relay waits at most this long for the server (list and read requests are short). */
export const MAX_RELAY_TIMEOUT_MS = 60_000;

/** A resource URI's length bound. */
export const MAX_URI_LENGTH = 2_048;
/** A prompt's arguments: at most this many, each name and value bounded. */
export const MAX_PROMPT_ARGUMENTS = 64;
export const MAX_PROMPT_ARGUMENT_BYTES = 64 * 1024;
const MAX_NAME = 256;
const MAX_CURSOR = 1_024;

/** C0 and C1 controls, and the Unicode bidirectional controls (a URI that reads differently than it is). */
// eslint-disable-next-line no-control-regex
const CONTROL_OR_BIDI = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;
/** Schemes that run code where a URI is opened: never a resource's. */
const SCRIPT_SCHEMES = new Set(['javascript', 'vbscript']);
/** A dot segment, plain or percent-encoded, anywhere in the path. */
const DOT_SEGMENT = /(?:^|\/)(?:\.|%2e){1,2}(?:\/|$|\?|#)/i;

/**
 * Why `uri` cannot be a resource's URI here, or undefined when it can: too long, control or bidi
 * characters, no scheme, a script scheme (`javascript:`), a `.` or `..` path segment (plain or
 * percent-encoded). The same rule for a client's URI and for a server's listed ones.
 */
export function resourceUriFault(uri: unknown): string | undefined {
  if (typeof uri !== 'string' || uri === '') return 'must be a URI';
  if (uri.length > MAX_URI_LENGTH) return `must be at most ${MAX_URI_LENGTH} characters`;
  if (CONTROL_OR_BIDI.test(uri)) return 'must not hold control or bidirectional-control characters';
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(uri)?.[1]?.toLowerCase();
  if (scheme === undefined) return 'must start with a scheme (scheme:…)';
  if (SCRIPT_SCHEMES.has(scheme)) return `must not use the ${scheme}: scheme`;
  if (DOT_SEGMENT.test(uri.slice(scheme.length + 1))) return 'must not hold . or .. path segments';
  return undefined;
}

const uriRule: Rule<string> = (v, field) => {
  const fault = resourceUriFault(v);
  if (fault !== undefined) throw invalidInput(field, fault);
  return v as string;
};

function bounded(max: number, says: string): Rule<string> {
  return (v, field) => {
    if (typeof v !== 'string' || v === '' || v.length > max) throw invalidInput(field, says);
    return v;
  };
}

const cursor = absentOrNull(bounded(MAX_CURSOR, `must be a cursor of at most ${MAX_CURSOR} characters`));
const name = bounded(MAX_NAME, `must be a name of at most ${MAX_NAME} characters`);

/** A prompt's (or a completion context's) arguments: a map of strings, bounded in count and size. */
const stringArguments: Rule<Record<string, string> | undefined> = (v, field) => {
  if (v === undefined || v === null) return undefined;
  if (!isMap(v)) throw invalidInput(field, 'must be a map of strings');
  const entries = Object.entries(v);
  if (entries.length > MAX_PROMPT_ARGUMENTS)
    throw invalidInput(field, `must hold at most ${MAX_PROMPT_ARGUMENTS} arguments`, { limit: MAX_PROMPT_ARGUMENTS });
  const out: Record<string, string> = {};
  for (const [k, value] of entries) {
    if (k === '' || k.length > MAX_NAME) throw invalidInput(field, `argument names must be 1-${MAX_NAME} characters`);
    if (typeof value !== 'string')
      throw invalidInput(`${field}.${k.slice(0, 64)}`, 'must be a string (a prompt argument is text)');
    if (Buffer.byteLength(value) > MAX_PROMPT_ARGUMENT_BYTES)
      throw invalidInput(`${field}.${k.slice(0, 64)}`, `must be at most ${MAX_PROMPT_ARGUMENT_BYTES} bytes`, {
        limit: MAX_PROMPT_ARGUMENT_BYTES,
      });
    out[k] = value;
  }
  return out;
};

const completionRef: Rule<{ type: 'ref/prompt'; name: string } | { type: 'ref/resource'; uri: string }> = (
  v,
  field,
) => {
  if (!isMap(v)) throw invalidInput(field, 'must be {type: ref/prompt, name} or {type: ref/resource, uri}');
  if (v.type === 'ref/prompt') return { type: 'ref/prompt', name: name(v.name, `${field}.name`) };
  if (v.type === 'ref/resource') {
    // A template's URI: `{…}` placeholders are allowed, the rest is a URI's.
    const uri = typeof v.uri === 'string' ? v.uri : '';
    const fault = resourceUriFault(uri.replace(/\{[^{}]{1,64}\}/g, 'x'));
    if (fault !== undefined) throw invalidInput(`${field}.uri`, fault);
    return { type: 'ref/resource', uri };
  }
  throw invalidInput(`${field}.type`, 'must be ref/prompt or ref/resource');
};

const completionArgument: Rule<{ name: string; value: string }> = (v, field) => {
  if (!isMap(v)) throw invalidInput(field, 'must be {name, value}');
  const value = v.value;
  if (typeof value !== 'string' || Buffer.byteLength(value) > MAX_PROMPT_ARGUMENT_BYTES)
    throw invalidInput(`${field}.value`, `must be a string of at most ${MAX_PROMPT_ARGUMENT_BYTES} bytes`);
  return { name: name(v.name, `${field}.name`), value };
};

/**
 * The params of a relayed method, checked and copied (only the fields MCP defines for it; a
 * client's `_meta` is not passed on): a typed `invalid_input` naming the first bad field
 * (`params.uri`, `params.arguments.<name>`), never a partial request.
 */
export function relayParams(method: RelayMethod, v: unknown, field = 'params'): Record<string, unknown> {
  const p = v === undefined || v === null ? {} : v;
  if (!isMap(p)) throw invalidInput(field, 'must be a map');
  switch (method) {
    case 'resources/list':
    case 'resources/templates/list':
    case 'prompts/list': {
      const c = cursor(p.cursor, `${field}.cursor`);
      return c === undefined ? {} : { cursor: c };
    }
    case 'resources/read':
      return { uri: uriRule(p.uri, `${field}.uri`) };
    case 'prompts/get': {
      const args = stringArguments(p.arguments, `${field}.arguments`);
      return { name: name(p.name, `${field}.name`), ...(args !== undefined ? { arguments: args } : {}) };
    }
    case 'completion/complete': {
      const ctx = p.context;
      if (ctx !== undefined && ctx !== null && !isMap(ctx))
        throw invalidInput(`${field}.context`, 'must be {arguments?}');
      const args = isMap(ctx) ? stringArguments(ctx.arguments, `${field}.context.arguments`) : undefined;
      return {
        ref: completionRef(p.ref, `${field}.ref`),
        argument: completionArgument(p.argument, `${field}.argument`),
        ...(args !== undefined ? { context: { arguments: args } } : {}),
      };
    }
  }
}

const id = matching(/^[A-Za-z0-9_-]{1,128}$/, '1-128 letters, digits, _ or -');
const serverName = matching(/^[A-Za-z0-9_.-]{1,64}$/, 'a server name');
const relayTimeout: Rule<number | undefined> = (v, field) => {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0)
    throw invalidInput(field, 'must be a positive number of milliseconds');
  return Math.min(v, MAX_RELAY_TIMEOUT_MS);
};
const relayFields = shape({
  account: id,
  agent: id,
  run: id,
  server: serverName,
  method: oneOf(...RELAY_METHODS),
  timeoutMs: relayTimeout,
  answers: absentOrNull(answers),
  inputRequestId: absentOrNull(matching(INPUT_REQUEST_ID_RE, 'an input request id (inp_…)')),
  inputResponses: absentOrNull(mapSaying('must be a map of answers by request key')),
});

/** Checks a decoded relay request: a new request holding only its fields, params checked for its method. */
export function parseRelayRequest(raw: unknown): RelayRequest {
  if (!isMap(raw)) throw invalidInput('request', 'must be a map');
  const head = relayFields(raw, '');
  if (head.inputRequestId !== undefined && !INPUT_METHODS.has(head.method))
    throw invalidInput('inputRequestId', `${head.method} has no input rounds`);
  if (head.inputResponses !== undefined && head.inputRequestId === undefined)
    throw invalidInput('inputResponses', 'goes with the inputRequestId it answers');
  const out: RelayRequest = {
    account: head.account,
    agent: head.agent,
    run: head.run,
    server: head.server,
    method: head.method,
    params: relayParams(head.method, raw.params),
  };
  if (head.timeoutMs !== undefined) out.timeoutMs = head.timeoutMs;
  if (head.answers !== undefined && Object.keys(head.answers).length > 0) out.answers = head.answers;
  if (head.inputRequestId !== undefined) out.inputRequestId = head.inputRequestId;
  if (head.inputResponses !== undefined) out.inputResponses = head.inputResponses;
  return out;
}

/** Decodes a relay request's bytes with the strict decoder ({@link RELAY_REQUEST_LIMITS}), then checks its shape. */
export function decodeRelayRequest(data: Uint8Array): RelayRequest {
  let raw: unknown;
  try {
    raw = decodeStrict(data, 'request', RELAY_REQUEST_LIMITS);
  } catch (err) {
    throw boundInField(err, 0);
  }
  return parseRelayRequest(raw);
}

/** Encodes a relay request, its params checked first (nothing is sent that the proxy would refuse). */
export function encodeRelayRequest(req: RelayRequest): Uint8Array {
  const checked = parseRelayRequest(req);
  const payload = encodePayload(checked);
  if (payload.byteLength > MAX_RELAY_REQUEST_BYTES)
    throw invalidInput(
      'params',
      `the request would be ${payload.byteLength} bytes, more than ${MAX_RELAY_REQUEST_BYTES}`,
      { rule: StrictRules.size, limit: MAX_RELAY_REQUEST_BYTES },
    );
  return payload;
}

/** A relay reply, strictly decoded: `{ok, instance, result | error}`; a malformed one is a typed `internal` naming the field. */
export function decodeRelayReply(bytes: Uint8Array): RelayReply {
  const malformed = (field: string): WireError =>
    new WireError(ErrorCodes.internal, 'malformed relay reply from the proxy', { field });
  let r: unknown;
  try {
    r = decodeStrict(bytes, 'reply');
  } catch {
    throw malformed('reply');
  }
  if (!isMap(r) || typeof r.instance !== 'string') throw malformed('reply');
  if (r.ok === true) {
    if (!isMap(r.result)) throw malformed('reply.result');
    return { ok: true, instance: r.instance, result: r.result };
  }
  if (r.ok === false) return { ok: false, instance: r.instance, error: WireError.from(r.error).toJSON() };
  throw malformed('reply.ok');
}
