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

/**
 * The client going away before its answer is written: listeners told at once (`onAbort`), and an
 * abort signal made only for whoever asks for one (a call that is only tracked for a cancel, the
 * common case, costs no AbortController).
 */
export class ClientClose {
  #controller: AbortController | undefined;
  #listeners: Array<() => void> | undefined;
  #closed = false;
  #finished = false;

  constructor(res: ServerResponse) {
    res.once('close', () => {
      if (!this.#finished) this.#close();
    });
  }

  /** Whether the client went away before the answer. */
  get aborted(): boolean {
    return this.#closed;
  }

  /** An abort signal of the client going away (made on the first ask). */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#closed) this.#controller.abort();
    }
    return this.#controller.signal;
  }

  /** Tells `fn` once if the client goes away (not if it went already, as a signal's listener); the returned function forgets it. */
  onAbort(fn: () => void): () => void {
    if (this.#closed) return () => {};
    (this.#listeners ??= []).push(fn);
    return () => {
      const i = this.#listeners?.indexOf(fn) ?? -1;
      if (i >= 0) this.#listeners!.splice(i, 1);
    };
  }

  /** The answer is written: a close from now on is not the client going away. */
  done(): void {
    this.#finished = true;
  }

  #close(): void {
    this.#closed = true;
    this.#controller?.abort();
    const listeners = this.#listeners;
    this.#listeners = undefined;
    for (const fn of listeners ?? []) fn();
  }
}

/** The client going away before the answer is written (see {@link ClientClose}). */
export function abortOnClose(res: ServerResponse): ClientClose {
  return new ClientClose(res);
}
