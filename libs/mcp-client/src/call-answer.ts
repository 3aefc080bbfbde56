/** What came back for a call: the answer read (status, JSON or SSE), its result checked per era. */
import { ProtocolError, type CallToolResult } from '@modelcontextprotocol/client';
import {
  discard,
  findResponse,
  header,
  mediaType,
  readErrorText,
  readJsonBody,
  readSseResponse,
  type JsonRpcResponse,
  type SseResponseScanner,
} from './body-reader.js';
import {
  HttpStatusError,
  McpClientError,
  McpClientErrorCode,
  McpClientRan,
  RefusedRpcError,
  rpcErrorCodeInBody,
} from './errors.js';
import type { RawResponse } from './http-request.js';

/** A modern `input_required` result as the server sent it, with the resultType checked. */
export interface InputRequiredWire {
  resultType: 'input_required';
  inputRequests?: Record<string, unknown>;
  requestState?: string;
  _meta?: Record<string, unknown>;
}

/**
 * The answer: status, then the JSON body or the SSE stream up to our response. A non-2xx is an
 * {@link HttpStatusError} (a 3xx too: redirects are not followed on the call path), except a
 * modern answer whose body is a JSON-RPC error (e.g. -32022, -32020): that is the
 * server's {@link ProtocolError}, as the SDK delivers it (HTTP 400 whose body is the error
 * response to our id), typed {@link RefusedRpcError} to keep the status the SDK drops.
 */
export async function readAnswer(
  res: RawResponse,
  scanner: SseResponseScanner,
  era: 'modern' | 'legacy',
): Promise<JsonRpcResponse | undefined> {
  const { statusCode, body } = res;
  if (statusCode < 200 || statusCode > 299) {
    const text = await readErrorText(body);
    if (era === 'modern' && statusCode === 400) {
      const rpc = jsonRpcErrorOf(text, scanner.id, statusCode);
      if (rpc !== undefined) throw rpc;
    }
    throw new HttpStatusError(
      statusCode,
      `Error POSTing to endpoint: ${text}`,
      header(res.headers, 'www-authenticate'),
      rpcErrorCodeInBody(text),
    );
  }
  const type = mediaType(header(res.headers, 'content-type'));
  if (type === 'application/json') return findResponse(await readJsonBody(res), scanner.id);
  if (type === 'text/event-stream') return readSseResponse(body, scanner);
  discard(body);
  throw new McpClientError(
    McpClientErrorCode.TransportError,
    `MCP server answered tools/call with an unexpected content type: ${type || '(none)'}`,
    { transport: 'http' },
  );
}

function jsonRpcErrorOf(text: string, id: string, status: number): RefusedRpcError | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if ((parsed as JsonRpcResponse | null)?.id !== id) return undefined;
  const e = (parsed as JsonRpcResponse | null)?.error;
  if (e === null || typeof e !== 'object' || typeof e.code !== 'number') return undefined;
  return new RefusedRpcError(status, e.code, typeof e.message === 'string' ? e.message : 'error', e.data);
}

export function resultObject(message: JsonRpcResponse | undefined, era: 'modern' | 'legacy'): Record<string, unknown> {
  if (message === undefined) {
    if (era === 'modern') throw maybeExecuted('the response stream ended before the result', undefined);
    throw new McpClientError(
      McpClientErrorCode.TransportError,
      'MCP response ended before the result, with no event id to resume from: the server may have executed the call',
      {
        transport: 'http',
        ran: McpClientRan.Maybe,
      },
    );
  }
  if (message.error !== undefined) {
    const e = message.error;
    throw new ProtocolError(
      typeof e.code === 'number' ? e.code : -32603,
      typeof e.message === 'string' ? e.message : 'error',
      e.data,
    );
  }
  const result = message.result;
  if (result === null || typeof result !== 'object' || Array.isArray(result)) {
    throw new McpClientError(
      McpClientErrorCode.TransportError,
      'MCP server answered tools/call with a result that is not an object',
      { transport: 'http' },
    );
  }
  return result as Record<string, unknown>;
}

export function legacyResult(message: JsonRpcResponse | undefined): CallToolResult {
  return resultObject(message, 'legacy') as CallToolResult;
}

/** A modern result, its `resultType` checked as the SDK's 2026-07-28 codec does. */
export function modernResult(message: JsonRpcResponse | undefined, tasks: boolean): CallToolResult | InputRequiredWire {
  const result = resultObject(message, 'modern');
  const type = result.resultType;
  // Absent means complete (SEP-2322: "the client MUST assume complete"; the conformance suite
  // holds clients to it, though the SDK's own codec refuses such a modern result).
  if (type === 'complete' || type === undefined) {
    const { resultType: _complete, ...rest } = result;
    if (rest.content !== undefined && !Array.isArray(rest.content)) throw invalidResult('content is not an array');
    return rest as CallToolResult;
  }
  if (type === 'input_required') {
    const requests = result.inputRequests;
    const state = result.requestState;
    const hasRequests =
      requests !== null && typeof requests === 'object' && !Array.isArray(requests) && Object.keys(requests).length > 0;
    if (!hasRequests && typeof state !== 'string')
      throw invalidResult('input_required carries neither inputRequests nor requestState');
    if (requests !== undefined && !(requests !== null && typeof requests === 'object' && !Array.isArray(requests)))
      throw invalidResult('inputRequests is not an object');
    if (state !== undefined && typeof state !== 'string') throw invalidResult('requestState is not a string');
    return result as unknown as InputRequiredWire;
  }
  // A task the call created: only when the call declared the tasks extension (a task-augmented
  // call); the caller reads it with `createdTaskOf`. Unasked, a task is as unsupported as any.
  if (type === 'task' && tasks) return result as unknown as CallToolResult;
  throw invalidResult(
    typeof type === 'string'
      ? `an unsupported resultType ${JSON.stringify(type.slice(0, 64))}`
      : 'a resultType that is not a string',
  );
}

function invalidResult(why: string): McpClientError {
  return new McpClientError(
    McpClientErrorCode.ProtocolError,
    `MCP server answered tools/call with an invalid result: ${why}`,
    { transport: 'http' },
  );
}

/** A modern call whose response broke after it was sent: it may have run, and is never retried. */
export function maybeExecuted(detail: string, cause: unknown): McpClientError {
  return new McpClientError(
    McpClientErrorCode.MaybeExecuted,
    `MCP response stream broke after the call was sent: the server may have executed it (2026-07-28 has no resumption); not retried (${detail})`,
    { transport: 'http' },
    cause === undefined ? undefined : { cause },
  );
}
