import {
  CONTENT_META_MAX_BYTES,
  IMAGE_MAX_BYTES,
  OMITTED_META_KEY,
  carriesProtoKey,
  flattenCallResult,
  jsonSizeExceeds,
  wholeContent,
  type ContentLimits,
  type McpToolDocument,
  type ProxyResult,
} from '@mcpx/domain';
import type { ProxyCallRequest } from '@mcpx/contracts';
import type { McpCallResult } from '@mcpx/mcp-client';

/** What the reply leaves out of a structured result, and why. */
export interface StructuredFault {
  reason: 'resultBytes' | 'proto_key';
  /** The runtime's line: `[structured result omitted: …]`. */
  text: string;
}

/**
 * Why `structured` cannot go in the reply, if it cannot: more than `resultBytes` of JSON, or the
 * key `__proto__`, which the wire refuses (the runtime's decoder would refuse the whole reply).
 */
export function structuredFault(structured: unknown, resultBytes: number | undefined): StructuredFault | undefined {
  if (structured === undefined) return undefined;
  if (resultBytes !== undefined && jsonSizeExceeds(structured, resultBytes)) {
    return { reason: 'resultBytes', text: `[structured result omitted: more than ${resultBytes} bytes of JSON]` };
  }
  if (carriesProtoKey(structured))
    return { reason: 'proto_key', text: '[structured result omitted: it carries the key "__proto__"]' };
  return undefined;
}

/**
 * The bounds of whole content in a reply of at most `maxPayload` bytes: what is left after the
 * structured result (`resultBytes`), the result's `_meta` and 64 KiB for the rest of the reply;
 * one block's data at most what that holds once base64-encoded, and never over the image bound.
 */
export function contentReplyLimits(maxPayload: number, resultBytes: number): Partial<ContentLimits> {
  const totalBytes = Math.max(64 * 1024, maxPayload - resultBytes - CONTENT_META_MAX_BYTES - 64 * 1024);
  return { totalBytes, binaryBytes: Math.min(IMAGE_MAX_BYTES, Math.floor((totalBytes * 3) / 4)) };
}

/**
 * The result for a caller that asked for the whole content (`content: true`): the row label and
 * the structured result as the runtime gets them, the server's blocks, `isError` and `_meta`
 * shaped by `wholeContent`, and a marker block where the structured result had to be left out.
 */
export function wholeCallResult(
  doc: McpToolDocument,
  req: ProxyCallRequest,
  result: McpCallResult,
  durationMs: number,
  bounds: { content?: Partial<ContentLimits>; resultBytes?: number } = {},
): ProxyResult {
  const structuredContent = (result as { structuredContent?: unknown }).structuredContent;
  const out = flattenCallResult({
    tool: doc.name,
    server: doc.server,
    remoteName: doc.remoteName,
    arguments: req.arguments,
    result: { structuredContent },
    durationMs,
  });
  const whole = wholeContent(result, bounds.content);
  out.content = whole.content;
  if (whole.isError === true) out.isError = true;
  if (whole.meta !== undefined) out.meta = whole.meta;
  const fault = structuredFault(out.result, bounds.resultBytes);
  if (fault !== undefined) {
    delete out.result;
    const limit = fault.reason === 'resultBytes' ? { limit: bounds.resultBytes } : {};
    out.content.push({
      type: 'text',
      text: fault.text,
      _meta: { [OMITTED_META_KEY]: { type: 'structuredContent', reason: fault.reason, ...limit } },
    });
  }
  return out;
}
