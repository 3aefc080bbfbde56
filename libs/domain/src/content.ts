// A tool result's content whole, for a caller that speaks MCP (the agent endpoint): every block in
// the server's order with its annotations and `_meta`, within bounds; what a bound stops becomes a
// marker block in its place that says what it was and which bound. docs/call.md#whole-content.

import { base64DecodedLength, blockFacts, describeFacts, isBase64, type BlockFacts } from './content-facts.js';
import { wireSizeWithin } from './json-measure.js';
import { nestsDeeper } from './nesting.js';
import { carriesProtoKey } from './proto-key.js';
import { IMAGE_MAX_BYTES, IMAGES_MAX_TOTAL_BYTES, TEXT_LIMIT_BYTES } from './result.js';
import { isPlainObject } from './types.js';
import { truncateUtf8, utf8ByteLength } from './utf8.js';

/** A content block as MCP sends it: a `type` and the fields of that type (the server's, bounded). */
export type ContentBlock = { type: string } & Record<string, unknown>;

/** `_meta` keys under this prefix are the connector's own: a server's are dropped, so none is forged. */
export const CONNECTOR_META_PREFIX = 'io.mcpx/';
/** `_meta` key of a marker block: `{type, reason, bytes?, limit?}` of the block it stands for. */
export const OMITTED_META_KEY = 'io.mcpx/omitted';
/**
 * Result `_meta` keys that describe the hop, not the result: the responding server's own
 * (`serverInfo`, 2026-07-28). The caller's server (the endpoint) names itself; the remote server's
 * would say the wrong server answered.
 */
export const HOP_META_KEYS: ReadonlySet<string> = new Set(['io.modelcontextprotocol/serverInfo']);
/** Content blocks kept in one result; the rest are counted in one closing marker. */
export const CONTENT_MAX_BLOCKS = 1000;
/** JSON bytes of one block's fields besides its text or data (annotations, `_meta`, names), and of the result's `_meta`. */
export const CONTENT_META_MAX_BYTES = 64 * 1024;
/** Nesting of one block's fields (the wire's decoder holds a whole reply to 128 levels). */
export const CONTENT_MAX_DEPTH = 32;

/** The bounds of whole content (docs/limits.md#the-call). */
export interface ContentLimits {
  /** One text block's text, or an embedded resource's, in UTF-8 bytes: cut past it ({@link TEXT_LIMIT_BYTES}). */
  textBytes: number;
  /** One image's, audio clip's or embedded blob's decoded bytes: replaced past it ({@link IMAGE_MAX_BYTES}). */
  binaryBytes: number;
  /** Bytes of all blocks together, as JSON or CBOR (the larger); a block past it is replaced ({@link IMAGES_MAX_TOTAL_BYTES}; the proxy sizes it to its reply). */
  totalBytes: number;
  /** Blocks kept ({@link CONTENT_MAX_BLOCKS}). */
  blocks: number;
  /** One block's other fields, and the result's `_meta`, as JSON or CBOR ({@link CONTENT_META_MAX_BYTES}). */
  metaBytes: number;
}

export const DEFAULT_CONTENT_LIMITS: Readonly<ContentLimits> = Object.freeze({
  textBytes: TEXT_LIMIT_BYTES,
  binaryBytes: IMAGE_MAX_BYTES,
  totalBytes: IMAGES_MAX_TOTAL_BYTES,
  blocks: CONTENT_MAX_BLOCKS,
  metaBytes: CONTENT_META_MAX_BYTES,
});

/** Why a block is not passed on as sent: the bound (a {@link ContentLimits} key) or the fault. */
export type OmittedReason = keyof ContentLimits | 'depth' | 'proto_key' | 'not_base64' | 'malformed' | 'unknown_type';

/** What a server's result becomes: its blocks (markers in place of what a bound stopped), `isError`, its `_meta`. */
export interface WholeContent {
  content: ContentBlock[];
  isError?: true;
  meta?: Record<string, unknown>;
}

const WHY: Record<OmittedReason, (limit: number | undefined) => string> = {
  textBytes: (n) => `a text is held to ${n} bytes`,
  binaryBytes: (n) => `one block's data is held to ${n} bytes`,
  totalBytes: (n) => `a result's content is held to ${n} bytes`,
  blocks: (n) => `a result is held to ${n} blocks`,
  metaBytes: (n) => `a block's other fields are held to ${n} bytes`,
  depth: () => `a block's fields may nest ${CONTENT_MAX_DEPTH} levels`,
  proto_key: () => 'it carries the key "__proto__"',
  not_base64: () => 'its data is not base64',
  malformed: () => 'it is not a well-formed block of its type',
  unknown_type: () => 'MCP has no such content type',
};

/** The marker that stands in a block's place: a text block saying what it was and why, and `_meta` saying the same as data. */
export function omittedBlock(facts: BlockFacts, reason: OmittedReason, limit?: number): ContentBlock {
  const said = describeFacts(facts);
  return {
    type: 'text',
    text: `[${facts.type} omitted${said === '' ? '' : `: ${said}`}; ${WHY[reason](limit)}]`,
    _meta: { [OMITTED_META_KEY]: { ...facts, reason, ...(limit !== undefined ? { limit } : {}) } },
  };
}

/** `meta` without the connector's own keys (and `drop`); undefined when nothing is left or it is not a map. */
export function serverMeta(meta: unknown, drop?: ReadonlySet<string>): Record<string, unknown> | undefined {
  if (!isPlainObject(meta)) return undefined;
  // fromEntries defines each key (an assignment of "__proto__" would set the prototype instead,
  // hiding the key from the check that refuses it).
  const kept = Object.entries(meta).filter(
    ([key]) => !key.startsWith(CONNECTOR_META_PREFIX) && drop?.has(key) !== true,
  );
  return kept.length === 0 ? undefined : Object.fromEntries(kept);
}

/** Why `fields` (a block without its text or data) cannot go as sent, if it cannot. */
function fieldsFault(fields: unknown, limits: ContentLimits): OmittedReason | undefined {
  if (wireSizeWithin(fields, limits.metaBytes) === undefined) return 'metaBytes';
  if (nestsDeeper(fields, CONTENT_MAX_DEPTH)) return 'depth';
  return carriesProtoKey(fields) ? 'proto_key' : undefined;
}

/** `text` within `limit` bytes: cut on a character boundary with the runtime's marker. */
function cutText(text: string, limit: number): string {
  if (text.length * 3 <= limit) return text;
  const bytes = utf8ByteLength(text);
  if (bytes <= limit) return text;
  const kept = truncateUtf8(text, limit);
  return `${kept}\n…[truncated: ${bytes - utf8ByteLength(kept)} bytes omitted; a text is held to ${limit} bytes]`;
}

/** The payload's own fault (bad base64, over the per-block bound), else undefined. */
function dataFault(data: string, limits: ContentLimits): OmittedReason | undefined {
  if (base64DecodedLength(data) > limits.binaryBytes) return 'binaryBytes';
  return isBase64(data) ? undefined : 'not_base64';
}

/** One block as it goes on: itself (a text cut to its bound), or the marker that replaces it. */
export function shapeBlock(part: unknown, limits: ContentLimits): ContentBlock {
  const facts = blockFacts(part);
  if (!isPlainObject(part)) return omittedBlock(facts, 'malformed');
  const { _meta, ...rest } = part;
  const meta = serverMeta(_meta);
  const block = (meta === undefined ? rest : { ...rest, _meta: meta }) as ContentBlock;
  const marker = (reason: OmittedReason, limit?: number): ContentBlock => omittedBlock(facts, reason, limit);
  const limitOf = (reason: OmittedReason): number | undefined =>
    reason in limits ? limits[reason as keyof ContentLimits] : undefined;
  const checked = (fields: unknown, payload: () => ContentBlock | OmittedReason): ContentBlock => {
    const fault = fieldsFault(fields, limits);
    if (fault !== undefined) return marker(fault, limitOf(fault));
    const out = payload();
    return typeof out === 'string' ? marker(out, limitOf(out)) : out;
  };
  switch (part.type) {
    case 'text': {
      const { text, ...fields } = block;
      if (typeof text !== 'string') return marker('malformed');
      return checked(fields, () => ({ ...block, text: cutText(text, limits.textBytes) }));
    }
    case 'image':
    case 'audio': {
      const { data, ...fields } = block;
      if (typeof data !== 'string' || typeof block.mimeType !== 'string') return marker('malformed');
      return checked(fields, () => dataFault(data, limits) ?? block);
    }
    case 'resource': {
      const resource = block.resource;
      if (!isPlainObject(resource) || typeof resource.uri !== 'string') return marker('malformed');
      const { text, blob, ...inner } = resource;
      const fields = { ...block, resource: inner };
      if (typeof text === 'string')
        return checked(fields, () => ({ ...block, resource: { ...resource, text: cutText(text, limits.textBytes) } }));
      if (typeof blob === 'string') return checked(fields, () => dataFault(blob, limits) ?? block);
      return marker('malformed');
    }
    case 'resource_link':
      if (typeof block.uri !== 'string' || typeof block.name !== 'string') return marker('malformed');
      return checked(block, () => block);
    default:
      return marker('unknown_type');
  }
}

/**
 * A server's `tools/call` result as whole content: each block shaped by {@link shapeBlock} in
 * the server's order; a block past the total bound is replaced by its marker, and once not even
 * a marker fits, or past the block count, the rest are counted in one closing marker. The blocks
 * stay within `totalBytes` plus that one marker; the result's `_meta` (without the connector's
 * keys) within `metaBytes`, else it is replaced by `{"io.mcpx/omitted": …}`.
 */
export function wholeContent(result: unknown, given?: Partial<ContentLimits>): WholeContent {
  const limits = { ...DEFAULT_CONTENT_LIMITS, ...given };
  const r = isPlainObject(result) ? result : {};
  const parts = Array.isArray(r.content) ? (r.content as unknown[]) : [];
  const content: ContentBlock[] = [];
  let used = 0;
  let rest: { count: number; reason: 'blocks' | 'totalBytes' } | undefined;
  for (const part of parts) {
    if (rest !== undefined) {
      rest.count++;
      continue;
    }
    if (content.length >= limits.blocks) {
      rest = { count: 1, reason: 'blocks' };
      continue;
    }
    const shaped = shapeBlock(part, limits);
    const left = limits.totalBytes - used;
    let size = wireSizeWithin(shaped, left);
    let kept = shaped;
    if (size === undefined) {
      kept = omittedBlock(blockFacts(part), 'totalBytes', limits.totalBytes);
      size = wireSizeWithin(kept, left);
    }
    if (size === undefined) {
      rest = { count: 1, reason: 'totalBytes' };
      continue;
    }
    content.push(kept);
    used += size;
  }
  if (rest !== undefined) {
    const limit = limits[rest.reason];
    content.push({
      type: 'text',
      text: `[${rest.count} more content block${rest.count === 1 ? '' : 's'} omitted; ${WHY[rest.reason](limit)}]`,
      _meta: { [OMITTED_META_KEY]: { type: 'blocks', count: rest.count, reason: rest.reason, limit } },
    });
  }
  const out: WholeContent = { content };
  if (r.isError === true) out.isError = true;
  const meta = serverMeta(r._meta, HOP_META_KEYS);
  if (meta !== undefined) {
    const fault = fieldsFault(meta, limits);
    out.meta =
      fault === undefined
        ? meta
        : {
            [OMITTED_META_KEY]: {
              type: '_meta',
              reason: fault,
              ...(fault === 'metaBytes' ? { limit: limits.metaBytes } : {}),
            },
          };
  }
  return out;
}
