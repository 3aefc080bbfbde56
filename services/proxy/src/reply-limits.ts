import { ErrorCodes, WireError, type ProxyCallRequest } from '@mcpx/contracts';
import {
  TEXT_LIMIT_BYTES,
  flattenCallResult,
  isErrorResult,
  type ContentLimits,
  type FlattenLimits,
  type McpToolDocument,
  type ProxyResult,
} from '@mcpx/domain';
import type { McpCallResult } from '@mcpx/mcp-client';
import { contentReplyLimits, structuredFault, wholeCallResult } from './whole-result.js';

export interface ReplyLimits {
  flatten: Partial<FlattenLimits>;
  /** JSON bytes of `result` (structuredContent) passed on; a bigger one is replaced by a marker in `text`. */
  resultBytes: number;
  /** Whole content (a call with `content: true`), within the same payload. */
  content?: Partial<ContentLimits>;
}

/**
 * Bounds that keep a reply within NATS' max payload: text at 256 KiB (docs/limits.md#the-call), structured
 * content at 256 KiB of JSON, images within what is left (base64 is 4/3 of the bytes).
 */
export function replyLimits(maxPayload: number): ReplyLimits {
  const resultBytes = 256 * 1024;
  const left = Math.max(0, maxPayload - TEXT_LIMIT_BYTES - resultBytes - 64 * 1024);
  const images = Math.floor((left * 3) / 4);
  return {
    flatten: { imageBytes: images, imagesTotalBytes: images },
    resultBytes,
    content: contentReplyLimits(maxPayload, resultBytes),
  };
}

/**
 * A complete result as the runtime shows it (an `isError` one is the server's error), or whole
 * for a caller that asked so (`content`: `./whole-result.ts`), within the reply's bounds.
 */
export function finishedCall(
  doc: McpToolDocument,
  req: ProxyCallRequest,
  result: McpCallResult,
  started: number,
  bounds: ReplyLimits | undefined,
): ProxyResult {
  if (req.content === true) return wholeCallResult(doc, req, result, Math.round(performance.now() - started), bounds);
  const errorText = isErrorResult(result);
  if (errorText !== undefined)
    throw new WireError(ErrorCodes.serverError, errorText || `${doc.name} reported an error`, { server: doc.server });
  const flat = flattenCallResult(
    {
      tool: doc.name,
      server: doc.server,
      remoteName: doc.remoteName,
      arguments: req.arguments,
      result,
      durationMs: Math.round(performance.now() - started),
    },
    bounds?.flatten,
  );
  // Left out with a line that says so; the call ran, so its text still goes.
  const fault = structuredFault(flat.result, bounds?.resultBytes);
  if (fault !== undefined) {
    delete flat.result;
    flat.text = flat.text === undefined ? fault.text : `${flat.text}\n${fault.text}`;
  }
  return flat;
}
