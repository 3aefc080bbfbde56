import { ProtocolError, type CallToolRequest, type CallToolResult, type Progress } from '@modelcontextprotocol/client';
import { SseResponseScanner, type JsonRpcOther, type JsonRpcResponse } from './body-reader.js';
import { HttpStatusError, McpClientError, McpClientErrorCode, McpClientRan } from './errors.js';
import { callRan, classifyMcpError } from './classify.js';
import { legacyResult, maybeExecuted, modernResult, readAnswer, type InputRequiredWire } from './call-answer.js';
import { answerServerRequest, legacyRequest, modernRequest } from './call-request.js';
import type { LegacyTarget, ToolCallOptions, ToolCallTarget } from './call-target.js';
import { resumeResponse } from './sse-resume.js';
import { CallClock } from './call-clock.js';

/**
 * The library's one `tools/call` path, for both eras, beside the SDK client that owns the rest of
 * the connection (discovery or the handshake, listing, `subscriptions/listen`, a legacy session's
 * GET stream and notifications). One POST of the JSON-RPC request through an explicit
 * {@link McpHttpRequest}; the answer is read by the one reader of its body kind (JSON or SSE).
 * Why not the SDK's `callTool`: it costs more than the whole rest of a proxied call (WHATWG
 * Request/Response objects, web streams, a zod parse of every result, per-request abort
 * plumbing; see BENCHMARKS.md), and a pass-through proxy needs none of it (results are untrusted
 * and bounded downstream).
 *
 * Modern (2026-07-28), as the SDK sends it: `MCP-Protocol-Version`, `Mcp-Method: tools/call`,
 * `Mcp-Name`, one `Mcp-Param-<Name>` per `x-mcp-header` parameter of the listed tool (same value
 * encoding), the configured headers (auth); `_meta` with the protocol version, the client's
 * capabilities and info and the caller's `traceparent`/`tracestate`. The result's `resultType` is
 * checked: `complete` (or absent: SEP-2322 says a client assumes complete) is a result,
 * `input_required` is handed back intact (it must carry `inputRequests` or `requestState`),
 * anything else is refused with `protocol_error`. A response stream
 * that breaks after the request went out fails with `maybe_executed` (no resumption in 2026-07-28).
 *
 * Legacy (2025-11-25 session): the session headers; a broken stream after an event id is resumed
 * with `Last-Event-ID` (`sse-resume.ts`), without one it fails with `transport_error`.
 *
 * Request ids are strings (`mcpx-N`), so they never collide with the SDK's numeric ids.
 */
let nextId = 0;

export async function toolCall(
  target: ToolCallTarget,
  params: CallToolRequest['params'],
  opts: ToolCallOptions,
): Promise<CallToolResult | InputRequiredWire> {
  const id = `mcpx-${++nextId}`;
  const clock = new CallClock(opts.timeoutMs, opts.signal, opts.controller);
  const progressToken = opts.onProgress !== undefined || opts.resetTimeoutOnProgress === true ? id : undefined;
  const onOther =
    progressToken === undefined && target.era === 'modern' && opts.onLog === undefined
      ? undefined
      : streamListener(target, opts, progressToken, clock);
  const { headers, body } =
    target.era === 'modern'
      ? modernRequest(target, id, params, opts, progressToken)
      : legacyRequest(target, id, params, progressToken, opts.trace);
  const scanner = new SseResponseScanner(id, onOther);
  let sent = false;
  try {
    let message: JsonRpcResponse | undefined;
    let broke: unknown;
    try {
      const res = await target.request(target.url, { method: 'POST', headers, body, signal: clock.signal });
      sent = true;
      message = await readAnswer(res, scanner, target.era);
    } catch (err) {
      // Only a legacy event stream that got as far as an event id can be resumed.
      if (
        target.era === 'modern' ||
        scanner.lastEventId === undefined ||
        clock.signal.aborted ||
        err instanceof McpClientError
      )
        throw err;
      broke = err;
    }
    if (message === undefined && target.era === 'legacy' && scanner.lastEventId !== undefined)
      message = await resumed(target, scanner, clock.signal, broke, opts.onResume);
    return target.era === 'modern' ? modernResult(message, opts.tasks === true) : legacyResult(message);
  } catch (err) {
    throw callFailure(err, target, id, sent, clock, opts);
  } finally {
    clock.dispose();
  }
}

/**
 * What the call hears on its response stream besides its answer: a legacy server's request
 * (answered on the session), a log message, and this call's progress.
 */
function streamListener(
  target: ToolCallTarget,
  opts: ToolCallOptions,
  progressToken: string | undefined,
  clock: CallClock,
): (m: JsonRpcOther) => void {
  return (m) => {
    if (target.era === 'legacy' && m.id !== undefined) {
      answerServerRequest(target, m, clock.signal);
      return;
    }
    if (m.method === 'notifications/message') {
      opts.onLog?.(m.params);
      return;
    }
    const p = m.params as ({ progressToken?: unknown } & Progress) | undefined;
    if (progressToken === undefined || m.method !== 'notifications/progress' || p?.progressToken !== progressToken)
      return;
    if (opts.resetTimeoutOnProgress) clock.restart();
    const { progressToken: _token, ...progress } = p;
    opts.onProgress?.(progress);
  };
}

/** A legacy stream that broke after an event id, resumed (`./sse-resume.ts`); the caller is told how it went. */
async function resumed(
  target: LegacyTarget,
  scanner: SseResponseScanner,
  signal: AbortSignal,
  broke: unknown,
  onResume: ToolCallOptions['onResume'],
): Promise<JsonRpcResponse | undefined> {
  let message: JsonRpcResponse | undefined;
  try {
    message = await resumeResponse(target, scanner, signal, broke);
  } catch (err) {
    onResume?.('failed');
    throw err;
  }
  onResume?.('resumed');
  return message;
}

/** Every failure leaves as an McpClientError saying what may have run (set here, where it is known). */
function callFailure(
  err: unknown,
  target: ToolCallTarget,
  id: string,
  sent: boolean,
  clock: CallClock,
  opts: ToolCallOptions,
): McpClientError {
  if (clock.why === 'timeout') {
    if (target.era === 'legacy' && (sent || clock.signal.aborted)) target.cancelled(id, 'timeout');
    return new McpClientError(
      McpClientErrorCode.Timeout,
      `MCP request timed out after ${opts.timeoutMs} ms`,
      { transport: 'http', ran: McpClientRan.Maybe },
      { cause: err },
    );
  }
  if (clock.why === 'cancelled') {
    // Modern: closing the request's connection is the cancellation (no session to notify).
    if (target.era === 'legacy') target.cancelled(id, 'cancelled by the caller');
    return new McpClientError(
      McpClientErrorCode.Cancelled,
      'MCP request cancelled',
      { transport: 'http', ran: McpClientRan.Maybe },
      { cause: err },
    );
  }
  if (
    sent &&
    !(err instanceof McpClientError) &&
    !(err instanceof ProtocolError) &&
    !(err instanceof HttpStatusError)
  ) {
    // The request reached the server and the answer broke off: it may have run.
    const detail = err instanceof Error ? err.message : String(err);
    if (target.era === 'modern') return maybeExecuted(detail, err);
    return new McpClientError(
      McpClientErrorCode.TransportError,
      `MCP connection dropped during the call (the server may have executed it): ${detail}`,
      { transport: 'http', ran: McpClientRan.Maybe },
      { cause: err },
    );
  }
  return classifyMcpError(err, undefined, { ...opts.classify, ran: callRan(err, sent) });
}
