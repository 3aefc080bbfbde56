import { ErrorCodes, INPUT_LIMITS, WireError, checkElicitAnswer, type InputRequestItem } from '@mcpx/contracts';
import type { InputRecord } from '@mcpx/shared-state';

function isMap(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && !ArrayBuffer.isView(v);
}

/** Bytes of a value's JSON (infinite when it has none). */
export function jsonBytes(v: unknown): number {
  try {
    return Buffer.byteLength(JSON.stringify(v) ?? '');
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

/** A runtime's question whose answer is kept with the input request (a task's: no call is re-sent to carry it). */
export function storedForRuntime(record: InputRecord, item: InputRequestItem): boolean {
  return item.answerBy === 'runtime' && record.personKeys.includes(`,${item.key},`);
}

/**
 * The runtime's answers a re-sent call carries (`given`), each checked: only the questions the
 * round gave the runtime (and did not keep with the request), every one of them answered.
 * `invalid_input` naming the key otherwise. `tool` names the asking tool in the message.
 */
export function runtimeResponses(
  record: InputRecord,
  items: InputRequestItem[],
  given: Record<string, unknown>,
  tool: string,
): Record<string, unknown> {
  for (const key of Object.keys(given)) {
    const item = items.find((i) => i.key === key);
    if (item === undefined || item.answerBy !== 'runtime') {
      throw new WireError(
        ErrorCodes.invalidInput,
        `inputResponses.${key.slice(0, 64)}: the runtime answers only the questions the input request gave it`,
        {
          field: `inputResponses.${key.slice(0, 64)}`,
        },
      );
    }
  }
  const responses: Record<string, unknown> = {};
  for (const item of items) {
    if (item.answerBy !== 'runtime' || storedForRuntime(record, item)) continue;
    const v = given[item.key];
    if (v === undefined) {
      throw new WireError(
        ErrorCodes.invalidInput,
        `inputResponses.${item.key}: the runtime must answer this question of ${tool}`,
        { field: `inputResponses.${item.key}`, inputRequestId: record.id },
      );
    }
    responses[item.key] = checkRuntimeAnswer(item, v, `inputResponses.${item.key}`);
  }
  return responses;
}

/**
 * A runtime's answer to one of its questions, checked for the question's kind: a sampling result,
 * a roots list, or an elicitation answer fitting the form's schema. `invalid_input` naming `at`.
 */
export function checkRuntimeAnswer(item: InputRequestItem, v: unknown, at: string): unknown {
  return item.kind === 'sampling'
    ? checkSamplingAnswer(v, at)
    : item.kind === 'roots'
      ? checkRootsAnswer(v, at)
      : checkElicitAnswer(v, item.kind === 'form' ? item.requestedSchema : undefined, at);
}

/** A sampling answer (`CreateMessageResult`): an assistant message with content, and the model that wrote it. */
function checkSamplingAnswer(v: unknown, at: string): Record<string, unknown> {
  if (!isMap(v))
    throw new WireError(ErrorCodes.invalidInput, `${at}: must be a sampling result {role, content, model}`, {
      field: at,
    });
  if (v.role !== 'assistant')
    throw new WireError(ErrorCodes.invalidInput, `${at}.role: must be assistant`, { field: `${at}.role` });
  if (!isMap(v.content) && !Array.isArray(v.content))
    throw new WireError(ErrorCodes.invalidInput, `${at}.content: must be a content block`, { field: `${at}.content` });
  if (typeof v.model !== 'string' || v.model === '' || v.model.length > 200)
    throw new WireError(ErrorCodes.invalidInput, `${at}.model: must name the model`, { field: `${at}.model` });
  if (jsonBytes(v) > INPUT_LIMITS.answerBytes)
    throw new WireError(
      ErrorCodes.invalidInput,
      `${at}: must be at most ${INPUT_LIMITS.answerBytes / 1024} KiB of JSON`,
      { field: at },
    );
  return v;
}

/** Roots one answer may list, and the characters of one root's URI and name. */
const ROOTS_MAX = 100;
const ROOT_URI_MAX = 2_048;
const ROOT_NAME_MAX = 200;

/** A runtime's answer to `roots/list`: `{roots: [{uri, name?}]}`, bounded, each URI a `file:` URI (as MCP says). */
function checkRootsAnswer(v: unknown, at: string): Record<string, unknown> {
  if (!isMap(v) || !Array.isArray(v.roots))
    throw new WireError(ErrorCodes.invalidInput, `${at}: must be a roots result {roots: [{uri, name?}]}`, {
      field: at,
    });
  if (v.roots.length > ROOTS_MAX)
    throw new WireError(ErrorCodes.invalidInput, `${at}.roots: at most ${ROOTS_MAX} roots`, { field: `${at}.roots` });
  const roots = v.roots.map((r: unknown, i: number) => {
    const field = `${at}.roots.${i}`;
    if (!isMap(r) || typeof r.uri !== 'string' || r.uri.length > ROOT_URI_MAX || !r.uri.startsWith('file://')) {
      throw new WireError(
        ErrorCodes.invalidInput,
        `${field}.uri: must be a file:// URI of at most ${ROOT_URI_MAX} characters`,
        { field: `${field}.uri` },
      );
    }
    if (r.name !== undefined && (typeof r.name !== 'string' || r.name.length > ROOT_NAME_MAX)) {
      throw new WireError(
        ErrorCodes.invalidInput,
        `${field}.name: must be a string of at most ${ROOT_NAME_MAX} characters`,
        { field: `${field}.name` },
      );
    }
    return { uri: r.uri, ...(typeof r.name === 'string' ? { name: r.name } : {}) };
  });
  return { roots };
}
