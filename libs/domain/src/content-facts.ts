// What a result's content block is, in the few words a marker says of it (URI, MIME type, size):
// shared by the runtime's flattened text and the endpoint's whole content, so both name a block
// they cannot carry the same way.

import { isPlainObject } from './types.js';
import { truncateCodePoints, utf8ByteLength } from './utf8.js';

/** A server's string in a marker (a URI, a MIME type, a type name) is held to this many code points. */
export const MARKER_LABEL_MAX_CHARS = 200;

/** A block as a marker names it: its type and, when known, its URI, MIME type and size in bytes (decoded, for base64 data). */
export interface BlockFacts {
  type: string;
  uri?: string;
  mimeType?: string;
  bytes?: number;
}

// Controls, and the format characters that reorder or hide text (bidi overrides, zero-width):
// a server's URI must not forge or hide the words around it.
const UNSAFE = /[\p{Cc}\p{Cf}\u2028\u2029]/gu;

/** A server's string as a marker shows it: unsafe characters as U+FFFD, at most `max` code points (`…` when cut). */
export function markerLabel(value: string, max = MARKER_LABEL_MAX_CHARS): string {
  const cut = truncateCodePoints(value, max);
  const safe = cut.replace(UNSAFE, '\uFFFD');
  return cut.length < value.length ? `${safe}…` : safe;
}

/** Decoded size of base64 `data`, from its length alone (the data is not decoded). */
export function base64DecodedLength(data: string): number {
  let padding = 0;
  if (data.endsWith('==')) padding = 2;
  else if (data.endsWith('=')) padding = 1;
  return Math.max(0, Math.floor(((data.length - padding) * 3) / 4));
}

/**
 * Standard base64, padded or not. Providers reject a turn whose inline image is not base64, and
 * MCP clients a result whose data is not, so a bad one is replaced. Plain scans, no backtracking
 * regex, because the data can be megabytes.
 */
export function isBase64(data: string): boolean {
  if (data.length % 4 === 1) return false;
  const pad = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  if (pad > 0 && data.length % 4 !== 0) return false;
  return !/[^A-Za-z0-9+/]/.test(pad === 0 ? data : data.slice(0, -pad));
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** The facts of a content block (anything: its fields are the server's, unchecked). */
export function blockFacts(part: unknown): BlockFacts {
  if (!isPlainObject(part)) return { type: part === null ? 'null' : Array.isArray(part) ? 'array' : typeof part };
  const facts: BlockFacts = { type: markerLabel(str(part.type) ?? 'untyped', 64) };
  const set = (uri: unknown, mimeType: unknown, bytes: number | undefined): BlockFacts => {
    if (typeof uri === 'string') facts.uri = markerLabel(uri);
    if (typeof mimeType === 'string') facts.mimeType = markerLabel(mimeType, 100);
    if (bytes !== undefined) facts.bytes = bytes;
    return facts;
  };
  switch (part.type) {
    case 'text':
      return set(undefined, undefined, typeof part.text === 'string' ? utf8ByteLength(part.text) : undefined);
    case 'image':
    case 'audio':
      return set(undefined, part.mimeType, typeof part.data === 'string' ? base64DecodedLength(part.data) : undefined);
    case 'resource_link': {
      const size = part.size;
      return set(
        part.uri,
        part.mimeType,
        typeof size === 'number' && Number.isSafeInteger(size) && size >= 0 ? size : undefined,
      );
    }
    case 'resource': {
      const r = isPlainObject(part.resource) ? part.resource : {};
      const bytes =
        typeof r.blob === 'string'
          ? base64DecodedLength(r.blob)
          : typeof r.text === 'string'
            ? utf8ByteLength(r.text)
            : undefined;
      return set(r.uri, r.mimeType, bytes);
    }
    default:
      return facts;
  }
}

/** `<uri>, <mimeType>, <n> bytes`: the facts a block has, in that order (empty when it has none). */
export function describeFacts(facts: BlockFacts): string {
  const parts: string[] = [];
  if (facts.uri !== undefined) parts.push(facts.uri);
  if (facts.mimeType !== undefined) parts.push(facts.mimeType);
  if (facts.bytes !== undefined) parts.push(`${facts.bytes} bytes`);
  return parts.join(', ');
}
