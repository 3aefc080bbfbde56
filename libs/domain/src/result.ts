import { isPlainObject } from './types.js';
import { boundText, codePointLength, truncateUtf8, utf8ByteLength } from './utf8.js';
import { jsonSizeExceeds } from './json-measure.js';
import { base64DecodedLength, blockFacts, describeFacts, isBase64 } from './content-facts.js';

export { base64DecodedLength, isBase64 } from './content-facts.js';

/** `text` is cut to this many UTF-8 bytes, then a visible marker is appended. */
export const TEXT_LIMIT_BYTES = 262_144;
/** The first string argument names the call only if it has at most this many characters. */
export const ARGUMENT_MAX_CHARS = 80;
export const IMAGE_MAX_BYTES = 5 * 1024 * 1024;
export const IMAGES_MAX_COUNT = 16;
export const IMAGES_MAX_TOTAL_BYTES = 20 * 1024 * 1024;
export const ERROR_TEXT_MAX_BYTES = 4096;

export interface ProxyImage {
  /** Base64, as the server sent it. */
  data: string;
  mimeType: string;
}

/**
 * What a call of an mcp tool answers (docs/call.md#results): a row label, text, structured result
 * and images. A caller that asked for the whole content (`content: true` on the call, the agent
 * endpoint) gets `content`, `isError` and `meta` instead of `text` and `images`
 * (docs/call.md#whole-content).
 */
export interface ProxyResult {
  summary: string;
  argument?: string;
  text?: string;
  result?: unknown;
  images?: ProxyImage[];
  /** The server's content blocks in its order, bounded (`./content.ts`). */
  content?: Array<{ type: string } & Record<string, unknown>>;
  /** The server marked the result an error (sent so only with `content`; otherwise it is `server_error`). */
  isError?: true;
  /** The result's `_meta`, without the connector's own keys. */
  meta?: Record<string, unknown>;
  /**
   * Set instead of a result when the call became a task that outlived the call bound
   * (docs/tasks.md): its id, state and the server's last status message.
   */
  task?: TaskHandle;
  durationMs: number;
}

/** A running task as a call's answer names it (docs/tasks.md#the-handle). */
export interface TaskHandle {
  id: string;
  state: string;
  statusMessage?: string;
}

/** The parts of an MCP `tools/call` result this library reads; everything in it is untrusted. */
export interface CallResultLike {
  content?: unknown[];
  structuredContent?: unknown;
  isError?: boolean;
}

export interface FlattenCallInput {
  /** The document name, e.g. `github__create_issue`. */
  tool: string;
  server: string;
  remoteName: string;
  arguments: Record<string, unknown>;
  result: CallResultLike;
  durationMs: number;
}

export interface FlattenLimits {
  textBytes: number;
  imageBytes: number;
  imageCount: number;
  imagesTotalBytes: number;
}

const DEFAULT_LIMITS: FlattenLimits = {
  textBytes: TEXT_LIMIT_BYTES,
  imageBytes: IMAGE_MAX_BYTES,
  imageCount: IMAGES_MAX_COUNT,
  imagesTotalBytes: IMAGES_MAX_TOTAL_BYTES,
};

/**
 * A remote result flattened for the agent. `summary` uses the document name: `<tool> · <argument>`,
 * or `Ran <tool> on the <server> MCP server` without an argument. `text` joins text parts and
 * embedded resource text with "\n"; what text cannot carry is named on a line of its own, never
 * dropped: `[resource link: <uri>, <mimeType>, <n> bytes]`, `[resource omitted: …]` for a binary
 * embedded resource, `[audio omitted: <mimeType>, <n> bytes]`, `[<type> omitted]` for a block MCP
 * does not define. Past `textBytes` it is cut on a character boundary and
 * `\n…[truncated: N bytes omitted]` is appended. Images over a per-image, count or total bound
 * become `[image omitted: …]` lines in `text`. `result` is `structuredContent` as is. Empty text
 * and no images are omitted, not empty.
 */
export function flattenCallResult(input: FlattenCallInput, limits?: Partial<FlattenLimits>): ProxyResult {
  const lim = { ...DEFAULT_LIMITS, ...limits };
  const text = new BoundedText(lim.textBytes);
  const images: ProxyImage[] = [];
  let imageBytes = 0;
  const result: CallResultLike = isPlainObject(input.result) ? input.result : {};
  for (const part of contentParts(result)) {
    if (!isPlainObject(part)) text.add(omittedLine(part));
    else if (part.type === 'image') {
      const mimeType = typeof part.mimeType === 'string' ? part.mimeType : 'unknown';
      const named = blockFacts(part).mimeType ?? 'unknown';
      const data = part.data;
      const size = typeof data === 'string' ? base64DecodedLength(data) : 0;
      let omitted: string | undefined;
      if (typeof data !== 'string' || !mimeType.startsWith('image/')) omitted = 'not a base64 image';
      else if (images.length >= lim.imageCount) omitted = `more than ${lim.imageCount} images`;
      else if (size > lim.imageBytes) omitted = `${size - lim.imageBytes} bytes over the limit`;
      else if (imageBytes + size > lim.imagesTotalBytes)
        omitted = `${imageBytes + size - lim.imagesTotalBytes} bytes over the limit`;
      else if (!isBase64(data)) omitted = 'not a base64 image';
      if (omitted !== undefined) text.add(`[image omitted: ${named}, ${omitted}]`);
      else {
        images.push({ data: data as string, mimeType });
        imageBytes += size;
      }
    } else {
      const carried = textOfPart(part);
      if (carried === undefined) text.add(omittedLine(part));
      else if (carried !== '') text.add(carried);
    }
  }

  const argument = firstStringArgument(input.arguments);
  const out: ProxyResult = {
    summary:
      argument === undefined ? `Ran ${input.tool} on the ${input.server} MCP server` : `${input.tool} · ${argument}`,
    durationMs: input.durationMs,
  };
  if (argument !== undefined) out.argument = argument;
  const joined = text.toString();
  if (joined !== '') out.text = joined;
  if (result.structuredContent !== undefined) out.result = result.structuredContent;
  if (images.length > 0) out.images = images;
  return out;
}

/**
 * The call's first string argument in key order, if it can name the call on one row: at most
 * {@link ARGUMENT_MAX_CHARS} characters, not blank and on a single line. A first string argument
 * that fails this gives no argument (later ones are not tried: they would name the wrong thing).
 */
export function firstStringArgument(args: unknown): string | undefined {
  if (!isPlainObject(args)) return undefined;
  for (const key of Object.keys(args)) {
    const value = args[key];
    if (typeof value !== 'string') continue;
    if (value.trim() === '' || /[\r\n]/.test(value) || codePointLength(value) > ARGUMENT_MAX_CHARS) return undefined;
    return value;
  }
  return undefined;
}

/**
 * For a result the server marked `isError: true`, the message to throw: its text (bounded to
 * 4 KiB), else its structured content as JSON, else a generic sentence. Undefined for a result
 * that is not an error, so it also reads as a predicate.
 */
export function isErrorResult(result: CallResultLike): string | undefined {
  if (!isPlainObject(result) || result.isError !== true) return undefined;
  const text = new BoundedText(ERROR_TEXT_MAX_BYTES);
  for (const part of contentParts(result)) {
    const line = textOfPart(part);
    if (line !== undefined && line !== '') text.add(line);
  }
  let message = text.toString().trim();
  if (
    message === '' &&
    result.structuredContent !== undefined &&
    !jsonSizeExceeds(result.structuredContent, 64 * 1024)
  ) {
    try {
      message = JSON.stringify(result.structuredContent) ?? '';
    } catch {
      message = '';
    }
  }
  return message === ''
    ? 'the MCP server reported an error without a message'
    : boundText(message, ERROR_TEXT_MAX_BYTES);
}

/** The content's blocks, as sent (a part that is not a map is named by the flattening, not skipped). */
function* contentParts(result: CallResultLike): Generator<unknown> {
  if (!Array.isArray(result.content)) return;
  yield* result.content;
}

/** The text a block carries: a text block's, an embedded resource's. */
function textOfPart(part: unknown): string | undefined {
  if (!isPlainObject(part)) return undefined;
  if (part.type === 'text') return typeof part.text === 'string' ? part.text : undefined;
  if (part.type === 'resource' && isPlainObject(part.resource) && typeof part.resource.text === 'string')
    return part.resource.text;
  return undefined;
}

/** The line that names a block text cannot carry (an empty text carries nothing, and says nothing). */
function omittedLine(part: unknown): string {
  const facts = blockFacts(part);
  const said = describeFacts(facts);
  if (facts.type === 'resource_link' && facts.uri !== undefined) return `[resource link: ${said}]`;
  return `[${facts.type} omitted${said === '' ? '' : `: ${said}`}]`;
}

/** Lines joined with "\n", keeping at most `maxBytes` and counting (not copying) the rest. */
class BoundedText {
  readonly #parts: string[] = [];
  #keptBytes = 0;
  #totalBytes = 0;
  #lines = 0;
  #truncated = false;

  constructor(readonly maxBytes: number) {}

  add(line: string): void {
    const piece = this.#lines++ > 0 ? `\n${line}` : line;
    const bytes = utf8ByteLength(piece);
    this.#totalBytes += bytes;
    if (this.#truncated) return;
    if (this.#keptBytes + bytes <= this.maxBytes) {
      this.#parts.push(piece);
      this.#keptBytes += bytes;
      return;
    }
    const cut = truncateUtf8(piece, this.maxBytes - this.#keptBytes);
    this.#parts.push(cut);
    this.#keptBytes += utf8ByteLength(cut);
    this.#truncated = true;
  }

  toString(): string {
    const text = this.#parts.join('');
    if (!this.#truncated) return text;
    return `${text}\n…[truncated: ${this.#totalBytes - this.#keptBytes} bytes omitted]`;
  }
}
