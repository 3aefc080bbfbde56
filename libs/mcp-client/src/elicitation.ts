import {
  ProtocolError,
  type ClientCapabilities,
  type CreateMessageRequestParams,
  type CreateMessageResult,
  type ElicitRequestParams,
  type ElicitResult,
} from '@modelcontextprotocol/client';

/**
 * A handler of a legacy server's `elicitation/create` (form or URL mode): resolve with the user's
 * answer (`accept` with `content`, `decline` or `cancel`); `signal` aborts when the server or the
 * request gives up. A throw answers the server with a JSON-RPC error.
 */
export type ElicitationHandler = (params: ElicitRequestParams, ctx: { signal: AbortSignal }) => Promise<ElicitResult>;

/**
 * A handler of a legacy server's `sampling/createMessage` (the server asks the client's model to
 * write a message): resolve with the `CreateMessageResult`; `signal` aborts when the server or the
 * request gives up. A throw answers the server with a JSON-RPC error.
 */
export type SamplingHandler = (
  params: CreateMessageRequestParams,
  ctx: { signal: AbortSignal },
) => Promise<CreateMessageResult>;

const INVALID_PARAMS = -32602;
const METHOD_NOT_FOUND = -32601;

/**
 * The answerer of the requests a legacy server pushes on a call's response stream, as the SDK
 * client's own `elicitation/create` handler does it: the request is checked (an object; form mode
 * by default, with an object `requestedSchema`; URL mode with a `url`), only within the declared
 * modes; the handler's answer is checked (`accept` | `decline` | `cancel`, `content` an object);
 * an accepted form gets the requested schema's defaults for the fields it leaves out when
 * `elicitation.form.applyDefaults` is declared (SEP-1034). `sampling/createMessage` goes to
 * `sampling` when one is given (its params an object with `messages`, its answer an object with
 * `role`, `content` and `model`). Any other method, or one without a handler, is refused (-32601).
 */
export function elicitationAnswerer(
  handler: ElicitationHandler | undefined,
  capabilities: ClientCapabilities,
  sampling?: SamplingHandler,
): (method: string, params: unknown, signal: AbortSignal) => Promise<unknown> {
  const declared = capabilities.elicitation as { form?: { applyDefaults?: boolean }; url?: object } | undefined;
  // An empty elicitation capability means form mode (2025-11-25 backwards compatibility).
  const formMode = declared !== undefined && (declared.form !== undefined || declared.url === undefined);
  const urlMode = declared?.url !== undefined;
  const applyDefaults = declared?.form?.applyDefaults === true;
  return async (method, params, signal) => {
    if (method === 'sampling/createMessage' && sampling !== undefined)
      return await answerSampling(sampling, params, signal);
    if (method !== 'elicitation/create' || handler === undefined)
      throw new ProtocolError(METHOD_NOT_FOUND, `Method not found: ${method.slice(0, 64)}`);
    if (params === null || typeof params !== 'object' || Array.isArray(params))
      throw new ProtocolError(INVALID_PARAMS, 'Invalid elicitation request: params is not an object');
    const p = { ...(params as Record<string, unknown>) };
    p.mode ??= 'form';
    if (typeof p.message !== 'string')
      throw new ProtocolError(INVALID_PARAMS, 'Invalid elicitation request: message is not a string');
    if (p.mode === 'form') {
      if (!formMode) throw new ProtocolError(INVALID_PARAMS, 'Client does not support form-mode elicitation requests');
      if (!isObject(p.requestedSchema))
        throw new ProtocolError(INVALID_PARAMS, 'Invalid elicitation request: requestedSchema is not an object');
    } else if (p.mode === 'url') {
      if (!urlMode) throw new ProtocolError(INVALID_PARAMS, 'Client does not support URL-mode elicitation requests');
      if (typeof p.url !== 'string')
        throw new ProtocolError(INVALID_PARAMS, 'Invalid elicitation request: url is not a string');
    } else {
      throw new ProtocolError(INVALID_PARAMS, 'Invalid elicitation request: unknown mode');
    }
    const result = await handler(p as ElicitRequestParams, { signal });
    const action = (result as { action?: unknown } | null)?.action;
    if (action !== 'accept' && action !== 'decline' && action !== 'cancel')
      throw new ProtocolError(INVALID_PARAMS, 'Invalid elicitation result: action');
    const content = (result as { content?: unknown }).content;
    if (content !== undefined && !isObject(content))
      throw new ProtocolError(INVALID_PARAMS, 'Invalid elicitation result: content is not an object');
    const answer: Record<string, unknown> = { action };
    if (content !== undefined) answer.content = { ...content };
    if (p.mode === 'form' && action === 'accept' && applyDefaults) {
      answer.content ??= {};
      applyElicitationDefaults(p.requestedSchema, answer.content, 0);
    }
    return answer;
  };
}

async function answerSampling(sampling: SamplingHandler, params: unknown, signal: AbortSignal): Promise<unknown> {
  if (!isObject(params) || !Array.isArray(params.messages))
    throw new ProtocolError(INVALID_PARAMS, 'Invalid sampling request: messages is not an array');
  const result: unknown = await sampling(params as CreateMessageRequestParams, { signal });
  if (
    !isObject(result) ||
    typeof result.role !== 'string' ||
    typeof result.model !== 'string' ||
    (!isObject(result.content) && !Array.isArray(result.content))
  ) {
    throw new ProtocolError(INVALID_PARAMS, 'Invalid sampling result: role, content and model');
  }
  return result;
}

/** Fills the fields `data` leaves out with the schema's `default` values (properties, anyOf/oneOf), bounded in depth. */
export function applyElicitationDefaults(schema: unknown, data: unknown, depth: number): void {
  if (depth > 16 || !isObject(schema) || !isObject(data)) return;
  const props = schema.properties;
  if (isObject(props)) {
    for (const [key, prop] of Object.entries(props)) {
      if (!isObject(prop)) continue;
      if (data[key] === undefined && Object.hasOwn(prop, 'default')) data[key] = structuredClone(prop.default);
      if (data[key] !== undefined) applyElicitationDefaults(prop, data[key], depth + 1);
    }
  }
  for (const keyword of ['anyOf', 'oneOf'] as const) {
    const subs = schema[keyword];
    if (Array.isArray(subs)) for (const sub of subs) applyElicitationDefaults(sub, data, depth + 1);
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
