/**
 * A server's questions (2026-07-28 `input_required`) as the connector reads and shows them: each
 * checked and bounded, and given to whoever answers it (a person, or the calling runtime).
 */
import {
  ENDPOINT_RUN_PREFIX,
  ErrorCodes,
  INPUT_LIMITS,
  WireError,
  checkRequestedSchema,
  type InputRequestItem,
  type ProxyCallRequest,
  type RestrictedSchema,
} from '@mcpx/contracts';
import type { McpToolDocument } from '@mcpx/domain';
import type { InputRecord } from '@mcpx/shared-state';
import { jsonBytes } from './input-answers.js';

/** Who asks, and for what: a call's request, or a relayed request's (`prompts/get`, `resources/read`). */
export type InputAsker = Pick<
  ProxyCallRequest,
  'account' | 'agent' | 'run' | 'tool' | 'answers' | 'inputRequestId' | 'inputResponses'
>;
/** Whose question it is: a tool's document, or the prompt or resource of a relayed request. */
export type InputTarget = Pick<McpToolDocument, 'name' | 'server' | 'remoteName'>;

/** One question as the server sent it. */
type WireQuestion = { method: string; params?: unknown };

function isMap(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && !ArrayBuffer.isView(v);
}

/** The server asked what cannot be shown: its fault, said as such. */
export function serverFault(doc: InputTarget, why: string, extra: Record<string, unknown> = {}): WireError {
  return new WireError(
    ErrorCodes.serverError,
    `the ${doc.server} MCP server asked for input that cannot be shown (${why})`,
    {
      server: doc.server,
      tool: doc.name,
      reason: 'invalid_input_request',
      ...extra,
    },
  );
}

/** A question the connector will not pass on, or a round it will not take (`input_refused`, with its reason). */
export function refused(
  doc: InputTarget,
  reason: string,
  message: string,
  extra: Record<string, unknown> = {},
): WireError {
  return new WireError(ErrorCodes.inputRefused, `${doc.name}: ${message}`, {
    reason,
    tool: doc.name,
    server: doc.server,
    ...extra,
  });
}

/**
 * The questions of an `input_required` result as they are shown, with who answers each. Throws
 * the typed error of a question this connector does not answer (roots; sampling for a runtime
 * that does not sample) or cannot show (a schema outside the restricted one); `onRefused` is told
 * the reason of a refusal first.
 */
export function classifyQuestions(
  req: InputAsker,
  doc: InputTarget,
  inputRequests: Record<string, WireQuestion>,
  formsByRuntime: boolean,
  onRefused: (reason: string) => void,
): InputRequestItem[] {
  const keys = Object.keys(inputRequests);
  if (keys.length > INPUT_LIMITS.requestsPerRound)
    throw serverFault(doc, `${keys.length} questions at once; at most ${INPUT_LIMITS.requestsPerRound}`);
  // A form goes to the caller when it declares it answers forms and either the agent's definition
  // lets its runtime answer them (`inputs.forms: "runtime"`, a setting about an unattended NATS
  // runtime), or the caller is the agent endpoint's MCP client (its `ep-` run, which no runtime
  // may use): a client that declared form elicitation shows the form to its own user.
  const formsToCaller = req.answers?.forms === true && (formsByRuntime || req.run.startsWith(ENDPOINT_RUN_PREFIX));
  return keys.map((key) => {
    if (!/^[A-Za-z0-9_.:-]{1,64}$/.test(key))
      throw serverFault(doc, 'a request key that is not 1-64 letters, digits or _ . : -');
    const { method, params } = inputRequests[key]!;
    const p = isMap(params) ? params : {};
    if (method === 'roots/list') return rootsQuestion(req, doc, key, onRefused);
    if (method === 'sampling/createMessage') return samplingQuestion(req, doc, key, p, onRefused);
    if (method !== 'elicitation/create')
      throw serverFault(doc, `an unknown kind of request (${method.slice(0, 64)})`, { key });
    const message = typeof p.message === 'string' ? p.message.slice(0, INPUT_LIMITS.messageChars) : '';
    if (p.mode === 'url' || (p.mode === undefined && typeof p.url === 'string'))
      return urlQuestion(doc, key, p, message);
    return formQuestion(doc, key, p, message, formsToCaller);
  });
}

/**
 * Only a runtime that shares its own roots answers (the endpoint's client that declared `roots`);
 * the connector has none of its own to give.
 */
function rootsQuestion(
  req: InputAsker,
  doc: InputTarget,
  key: string,
  onRefused: (reason: string) => void,
): InputRequestItem {
  if (req.answers?.roots !== true) {
    onRefused('roots_unsupported');
    throw refused(
      doc,
      'roots_unsupported',
      'the server asks for roots, which the calling runtime does not declare it shares (answers.roots), and this connector has none of its own (roots are deprecated in 2026-07-28)',
      { key },
    );
  }
  return { key, kind: 'roots', answerBy: 'runtime' };
}

/** The calling runtime samples, when it declares it does; the request's size is bounded. */
function samplingQuestion(
  req: InputAsker,
  doc: InputTarget,
  key: string,
  p: Record<string, unknown>,
  onRefused: (reason: string) => void,
): InputRequestItem {
  if (req.answers?.sampling !== true) {
    onRefused('sampling_unsupported');
    throw refused(
      doc,
      'sampling_unsupported',
      "the server asks the client's model to sample a message, and the calling runtime does not declare that it samples (answers.sampling)",
      { key },
    );
  }
  if (jsonBytes(p) > INPUT_LIMITS.samplingParamsBytes)
    throw serverFault(doc, `a sampling request over ${INPUT_LIMITS.samplingParamsBytes / 1024} KiB`, { key });
  return { key, kind: 'sampling', answerBy: 'runtime', params: p };
}

/** A URL elicitation, always a person's: an http(s) URL within bounds. */
function urlQuestion(doc: InputTarget, key: string, p: Record<string, unknown>, message: string): InputRequestItem {
  const url = typeof p.url === 'string' ? p.url : '';
  let parsed: URL | undefined;
  try {
    parsed = url.length <= INPUT_LIMITS.urlChars ? new URL(url) : undefined;
  } catch {
    parsed = undefined;
  }
  if (parsed === undefined || (parsed.protocol !== 'https:' && parsed.protocol !== 'http:'))
    throw serverFault(doc, 'a URL elicitation without an http(s) URL', { key });
  const item: InputRequestItem = { key, kind: 'url', answerBy: 'person', message, url: parsed.href };
  if (typeof p.elicitationId === 'string' && p.elicitationId.length <= 200) item.elicitationId = p.elicitationId;
  return item;
}

/** A form elicitation whose schema is within the restricted one. */
function formQuestion(
  doc: InputTarget,
  key: string,
  p: Record<string, unknown>,
  message: string,
  toCaller: boolean,
): InputRequestItem {
  let schema: RestrictedSchema;
  try {
    schema = checkRequestedSchema(p.requestedSchema);
  } catch (err) {
    throw serverFault(doc, err instanceof WireError ? err.message : 'an invalid requested schema', { key });
  }
  return { key, kind: 'form', answerBy: toCaller ? 'runtime' : 'person', message, requestedSchema: schema };
}

/** The questions (`inputRequests`, by key) and the opaque `requestState` of an `input_required` result. */
export function inputRoundOf(result: unknown): {
  inputRequests: Record<string, WireQuestion>;
  requestState?: string;
} {
  const r = result as { inputRequests?: unknown; requestState?: unknown };
  const inputRequests: Record<string, WireQuestion> = {};
  if (isMap(r.inputRequests)) {
    for (const [key, v] of Object.entries(r.inputRequests)) {
      inputRequests[key] =
        isMap(v) && typeof v.method === 'string'
          ? { method: v.method, ...(v.params !== undefined ? { params: v.params } : {}) }
          : { method: '' };
    }
  }
  return { inputRequests, ...(typeof r.requestState === 'string' ? { requestState: r.requestState } : {}) };
}

/** The typed `input_required` of a recorded round: what to answer, by whom, until when. */
export function inputRequiredError(doc: InputTarget, record: InputRecord, items: InputRequestItem[]): WireError {
  const first = items.find((i): i is Extract<InputRequestItem, { message: string }> => 'message' in i);
  const forPerson = items.some((i) => i.answerBy === 'person');
  const question = first?.message ? `: "${first.message.slice(0, 200)}"` : '';
  const who = forPerson ? 'a person answers it' : 'the runtime answers it';
  return new WireError(
    ErrorCodes.inputRequired,
    `${doc.name} asks for input before it can finish${question}; ${who} (input request ${record.id}), then re-send the same call with inputRequestId`,
    {
      inputRequestId: record.id,
      tool: doc.name,
      server: doc.server,
      round: record.round,
      forPerson,
      requests: items,
      expiresAt: new Date(record.expiresAt).toISOString(),
    },
  );
}
