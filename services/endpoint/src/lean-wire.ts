// What the lean tools/call path (./lean-calls.ts) writes: the bytes the SDK's path writes for the same answer.
import type { ServerResponse } from 'node:http';
import { ProtocolError, type CallToolResult, type InputRequiredResult } from '@modelcontextprotocol/server';
import type { Json } from './lean-requests.js';

/** The server's name and version, as the SDK's results carry them in `_meta` (2026-07-28). */
export interface ServerInfo {
  name: string;
  version: string;
}

/** The headers of a 2025 call's answer: one SSE stream, as the SDK's stateless serving opens it. */
export const SSE_HEADERS = {
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'content-type': 'text/event-stream',
  'x-accel-buffering': 'no',
};

/** One JSON-RPC message as an SSE event of a 2025 call's stream. */
export function sseMessage(json: string): string {
  return `event: message\ndata: ${json}\n\n`;
}

/**
 * A `tools/call` result as the SDK's codec writes it: its keys in the schema's order (`_meta`,
 * `content`, `structuredContent`, `isError`), then `resultType` and the server's info in `_meta`
 * on 2026-07-28; the 2025 result has neither.
 */
export function resultJson(r: CallToolResult, modern: boolean, serverInfo: ServerInfo): Json {
  const out: Json = {};
  const info = { 'io.modelcontextprotocol/serverInfo': serverInfo };
  if (r._meta !== undefined) out._meta = modern ? { ...r._meta, ...info } : r._meta;
  out.content = r.content;
  if (r.structuredContent !== undefined) out.structuredContent = r.structuredContent;
  if (r.isError !== undefined) out.isError = r.isError;
  if (modern) {
    out.resultType = 'complete';
    if (r._meta === undefined) out._meta = info;
  }
  return out;
}

/** An `input_required` result as the SDK writes it (2026-07-28 only). */
export function inputRequiredJson(r: InputRequiredResult, serverInfo: ServerInfo): Json {
  const { _meta, ...rest } = r as InputRequiredResult & { _meta?: Json };
  return { ...rest, _meta: { ...(_meta ?? {}), 'io.modelcontextprotocol/serverInfo': serverInfo } };
}

export function rpcErrorJson(id: string | number, err: unknown): string {
  if (err instanceof ProtocolError)
    return JSON.stringify({
      jsonrpc: '2.0',
      id,
      error: { code: err.code, message: err.message, ...(err.data !== undefined ? { data: err.data } : {}) },
    });
  return JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32603, message: 'Internal error' } });
}

/** An abort signal fired when the client goes away before the answer is written. */
export function abortOnClose(res: ServerResponse): { signal: AbortSignal; done: () => void } {
  const ac = new AbortController();
  let finished = false;
  res.once('close', () => {
    if (!finished) ac.abort();
  });
  return {
    signal: ac.signal,
    done: () => {
      finished = true;
    },
  };
}
