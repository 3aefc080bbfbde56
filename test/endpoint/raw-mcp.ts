/**
 * MCP on the raw wire, for tests that must send what an SDK client never would (a forged
 * `requestState`, an answer bound to other arguments) or compare answers byte for byte.
 */
import { TASKS_EXTENSION } from '../servers/tasks-upstream.js';

export interface RpcAnswer {
  status: number;
  /** The response's headers, lower-cased names. */
  headers: Record<string, string>;
  /** The body as received. */
  body: string;
  /** The JSON-RPC message answering the request (from JSON, or the SSE event that carries it). */
  message:
    | {
        jsonrpc: string;
        id?: unknown;
        result?: Record<string, unknown>;
        error?: { code: number; message: string; data?: unknown };
      }
    | undefined;
  result: (Record<string, unknown> & { resultType?: string; requestState?: string }) | undefined;
}

export const MODERN_VERSION = '2026-07-28';

/** The JSON-RPC message of a body: JSON, or the last `data:` event of an SSE stream that has an id. */
export function messageOf(body: string, contentType: string): RpcAnswer['message'] {
  if (contentType.includes('text/event-stream')) {
    const events = body
      .split(/\n\n/)
      .map((e) =>
        e
          .split('\n')
          .filter((l) => l.startsWith('data:'))
          .map((l) => l.slice(5).trimStart())
          .join('\n'),
      )
      .filter((d) => d !== '');
    for (const d of events.reverse()) {
      const m = JSON.parse(d) as NonNullable<RpcAnswer['message']>;
      if (m.id !== undefined && (m.result !== undefined || m.error !== undefined)) return m;
    }
    return undefined;
  }
  return body === '' ? undefined : (JSON.parse(body) as RpcAnswer['message']);
}

/** POSTs one JSON-RPC request; `headers` replace the defaults of the same name. */
export async function post(
  url: string,
  token: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<RpcAnswer> {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  const message = messageOf(text, res.headers.get('content-type') ?? '');
  return {
    status: res.status,
    headers: Object.fromEntries([...res.headers.entries()]),
    body: text,
    message,
    result: message?.result,
  };
}

let nextId = 1;

/**
 * A 2026-07-28 `tools/call` as an SDK v2 client sends it (the `_meta` envelope, `Mcp-Method` and
 * `Mcp-Name`), with `caps` as the declared client capabilities and `extra` params (a retry's
 * `requestState` and `inputResponses`).
 */
export function modernCall(
  url: string,
  token: string,
  name: string,
  args: Record<string, unknown>,
  caps: Record<string, unknown>,
  extra: Record<string, unknown> = {},
  id: number = nextId++,
): Promise<RpcAnswer> {
  const params = {
    name,
    arguments: args,
    _meta: {
      'io.modelcontextprotocol/protocolVersion': MODERN_VERSION,
      'io.modelcontextprotocol/clientCapabilities': caps,
      'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1.0.0' },
    },
    ...extra,
  };
  return post(
    url,
    token,
    { jsonrpc: '2.0', id, method: 'tools/call', params },
    { 'mcp-protocol-version': MODERN_VERSION, 'mcp-method': 'tools/call', 'mcp-name': name },
  );
}

/**
 * A 2026-07-28 request of a client that declares the tasks extension (`tools/call`, `tasks/get`,
 * `tasks/cancel`…), on the raw wire: the `_meta` envelope, `Mcp-Method`, and `Mcp-Name` from the
 * task id or the tool's name.
 */
export function modernTaskRequest(
  url: string,
  token: string,
  method: string,
  params: Record<string, unknown>,
): Promise<RpcAnswer> {
  return post(
    url,
    token,
    {
      jsonrpc: '2.0',
      id: 1,
      method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': MODERN_VERSION,
          'io.modelcontextprotocol/clientCapabilities': { extensions: { [TASKS_EXTENSION]: {} } },
          'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
        },
      },
    },
    {
      'mcp-protocol-version': MODERN_VERSION,
      'mcp-method': method,
      'mcp-name': String(params.taskId ?? params.name),
    },
  );
}

/** A 2025-11-25 `tools/call` as an SDK v1 client sends it after its (stateless) initialize; `headers` added (e.g. `traceparent`). */
export function legacyCall(
  url: string,
  token: string,
  name: string,
  args: Record<string, unknown>,
  id: number = nextId++,
  headers: Record<string, string> = {},
): Promise<RpcAnswer> {
  return post(
    url,
    token,
    { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } },
    { 'mcp-protocol-version': '2025-11-25', ...headers },
  );
}
