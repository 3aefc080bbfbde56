import type { OutboundError } from './errors.js';

/**
 * JSON-RPC code of the answer that stands in for a cut event stream: -32000, the first
 * implementation-defined server error, which MCP clients report as the connection having closed
 * (it was: the connector closed it).
 */
export const CUTOFF_JSONRPC_CODE = -32000;

type RequestId = string | number;

/** The ids of the JSON-RPC requests (not notifications, not responses) in a POST body: one message or a batch. */
export function requestIds(body: unknown): RequestId[] {
  let text: string | undefined;
  if (typeof body === 'string') text = body;
  else if (body instanceof Uint8Array)
    text = Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');
  if (text === undefined) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return [];
  }
  const ids: RequestId[] = [];
  for (const m of Array.isArray(parsed) ? parsed : [parsed]) {
    if (m === null || typeof m !== 'object' || typeof (m as { method?: unknown }).method !== 'string') continue;
    const id = (m as { id?: unknown }).id;
    if (typeof id === 'string' || typeof id === 'number') ids.push(id);
  }
  return ids;
}

/**
 * The end of an event stream that answers a POST and was cut at a bound: a blank line (which
 * ends whatever partial event came before: its data is not valid JSON-RPC and is dropped by
 * the client), then one JSON-RPC error per request of the POST, naming the bound. Without it an
 * MCP client would wait for its request's timeout and then report a timeout, not the bound.
 * Undefined when the POST held no request.
 */
export function cutoffEvents(ids: readonly RequestId[], err: OutboundError): Uint8Array | undefined {
  if (ids.length === 0) return undefined;
  let text = '\n\n';
  for (const id of ids) {
    const message = {
      jsonrpc: '2.0',
      id,
      error: { code: CUTOFF_JSONRPC_CODE, message: err.message, data: { code: err.code, bound: err.details.bound } },
    };
    text += `event: message\ndata: ${JSON.stringify(message)}\n\n`;
  }
  return new TextEncoder().encode(text);
}
