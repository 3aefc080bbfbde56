import { ErrorCodes, INPUT_LIMITS, WireError, checkElicitAnswer, type InputRequestItem } from '@mcpx/contracts';

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
