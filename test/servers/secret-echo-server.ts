/**
 * An MCP server on loopback (node:http, legacy era like `hostile-mcp-server.ts`) that echoes the
 * secrets it is sent, in every form a careless or hostile server might: the bearer token bare and
 * whole, upper-cased, base64 (also of the whole header line), base64url, percent- and
 * form-encoded, JSON-escaped; the same for the URL's `api_key` query value. It echoes them
 * wherever a server's text can travel:
 * - `/c500/mcp`: every POST (the connect) answers HTTP 500, a form in the body and the status text;
 * - `/c401/mcp`: every POST answers 401, a form in the body and in `WWW-Authenticate`;
 * - `/ok/mcp`: a working server whose tools echo: `rpc_error` (a JSON-RPC error message),
 *   `is_error` (an `isError` result), `echo_result` (a result's text and structured content),
 *   `http500` (HTTP 500 body and status text), `http401` (401 body), and `plain` (no echo).
 * A tool echoes the form its `form` argument names (all of them without one); a connect echoes
 * the next form in turn at each request (the connector keeps 300 characters of an error, so one
 * form per answer is what proves each form), `formsSent` records which.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import { ProtocolError } from '@modelcontextprotocol/server';
import { listenOnLoopback } from './loopback.js';
import type { TestTool } from './test-tools.js';

export interface SecretEchoServer {
  origin: string;
  /** The URL of a mode (`ok`, `c500`, `c401`) with `query` appended as it is. */
  url(mode: 'ok' | 'c500' | 'c401', query?: string): string;
  /** Every `Authorization` value received, and every `api_key` query value. */
  readonly received: { authorization: string[]; apiKey: string[] };
  /** The forms a failing connect echoed, in order, by mode. */
  readonly formsSent: Record<'c500' | 'c401', string[]>;
  close(): Promise<void>;
}

export const ECHO_TOOLS = ['rpc_error', 'is_error', 'echo_result', 'http500', 'http401'] as const;

const b64 = (s: string): string => Buffer.from(s).toString('base64');

/** Every form of `secret` the server echoes, by name. */
export function echoedForms(secret: string): Record<string, string> {
  return {
    bare: secret,
    bearer: `Bearer ${secret}`,
    upper: secret.toUpperCase(),
    lower: secret.toLowerCase(),
    base64: b64(secret),
    base64url: Buffer.from(secret).toString('base64url'),
    base64OfHeaderLine: b64(`Authorization: Bearer ${secret}`),
    base64OfBasic: b64(`user:${secret}`),
    urlEncoded: encodeURIComponent(secret),
    urlEncodedUpper: encodeURIComponent(secret).toUpperCase(),
    formEncoded: new URLSearchParams({ k: secret }).toString().slice(2),
    jsonEscaped: JSON.stringify(secret).slice(1, -1).replace(/\//g, '\\/'),
  };
}

export const FORM_NAMES = Object.keys(echoedForms('x'));

/** One line of the form `pick` (every form without one) of every secret the request carried (a status text allows no line breaks). */
function formsLine(secrets: string[], pick?: string): string {
  return secrets
    .flatMap((s) =>
      Object.entries(echoedForms(s))
        .filter(([k]) => pick === undefined || k === pick)
        .map(([k, v]) => `${k}=${v}`),
    )
    .join(' ; ');
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
}

const TOOLS = [...ECHO_TOOLS, 'plain'].map((name) => ({
  name,
  description: `Echo test tool ${name}.`,
  inputSchema: { type: 'object', properties: { form: { type: 'string' } } },
  annotations: { readOnlyHint: true },
}));

/** Starts the server on 127.0.0.1 (a free port). */
export async function startSecretEchoServer(): Promise<SecretEchoServer> {
  const received = { authorization: [] as string[], apiKey: [] as string[] };
  const formsSent = { c500: [] as string[], c401: [] as string[] };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://x');
    const mode = /^\/(ok|c500|c401)\/mcp$/.exec(url.pathname)?.[1];
    if (mode === undefined) return json(res, 404, { error: 'not found' });
    if (req.method === 'DELETE') return void res.writeHead(200).end();
    if (req.method !== 'POST') return void res.writeHead(405, { allow: 'POST, DELETE' }).end();
    const auth = req.headers.authorization ?? '';
    const apiKey = url.searchParams.get('api_key') ?? '';
    received.authorization.push(auth);
    received.apiKey.push(apiKey);
    const secrets = [auth.replace(/^Bearer /, ''), apiKey].filter((s) => s !== '');
    const body = await readBody(req);
    if (mode === 'c500' || mode === 'c401') {
      const form = FORM_NAMES[formsSent[mode].length % FORM_NAMES.length]!;
      formsSent[mode].push(form);
      const line = formsLine(secrets, form);
      if (mode === 'c500')
        return void res
          .writeHead(500, line, { 'content-type': 'text/plain' })
          .end(`internal failure; request had ${line}`);
      return void res
        .writeHead(401, {
          'content-type': 'text/plain',
          'www-authenticate': `Bearer error="invalid_token", error_description="${line}"`,
        })
        .end(`refused ${line}`);
    }
    const message = JSON.parse(body) as {
      id?: string | number;
      method?: string;
      params?: { protocolVersion?: string; name?: string; arguments?: { form?: string } };
    };
    if (message.id === undefined) return void res.writeHead(202).end();
    const id = message.id;
    const answer = (result: unknown, headers: Record<string, string> = {}): void =>
      json(res, 200, { jsonrpc: '2.0', id, result }, headers);
    switch (message.method ?? '') {
      case 'initialize':
        return answer(
          {
            protocolVersion: message.params?.protocolVersion ?? '2025-11-25',
            capabilities: { tools: {} },
            serverInfo: { name: 'secret-echo', version: '1.0.0' },
          },
          { 'mcp-session-id': randomUUID() },
        );
      case 'ping':
        return answer({});
      case 'tools/list':
        return answer({ tools: TOOLS });
      case 'tools/call':
        return callTool(res, id, message.params?.name ?? '', formsLine(secrets, message.params?.arguments?.form));
      default:
        return json(res, 200, {
          jsonrpc: '2.0',
          id,
          error: { code: -32601, message: `Method not found: ${message.method}` },
        });
    }
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  const listening = await listenOnLoopback(server);
  const origin = `http://127.0.0.1:${listening.port}`;
  return {
    origin,
    url: (mode, query = '') => `${origin}/${mode}/mcp${query}`,
    received,
    formsSent,
    close: () => listening.close(),
  };
}

function callTool(res: ServerResponse, id: string | number, tool: string, line: string): void {
  const text = `the server saw ${line}`;
  switch (tool) {
    case 'rpc_error':
      return json(res, 200, { jsonrpc: '2.0', id, error: { code: -32000, message: text, data: { echoed: line } } });
    case 'is_error':
      return json(res, 200, { jsonrpc: '2.0', id, result: { content: [{ type: 'text', text }], isError: true } });
    case 'echo_result':
      return json(res, 200, {
        jsonrpc: '2.0',
        id,
        result: { content: [{ type: 'text', text }], structuredContent: { echoed: line } },
      });
    case 'http500':
      return void res.writeHead(500, line, { 'content-type': 'text/plain' }).end(text);
    case 'http401':
      return void res.writeHead(401, { 'content-type': 'text/plain' }).end(text);
    default:
      return json(res, 200, { jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: 'plain' }] } });
  }
}

/** Tools that echo on a modern (2026-07-28) SDK server (`startTestMcpServer({era: 'modern', tools})`): the secrets are the test's own. */
export const MODERN_ECHO_TOOLS = ['rpc_error', 'is_error', 'echo_result'] as const;

export function modernEchoTools(secrets: string[]): TestTool[] {
  const inputSchema = { type: 'object', properties: { form: { type: 'string' } } };
  const line = (args: Record<string, unknown>): string =>
    formsLine(secrets, typeof args.form === 'string' ? args.form : undefined);
  return [
    {
      name: 'rpc_error',
      inputSchema,
      handler: (args) => {
        throw new ProtocolError(-32000, `the server saw ${line(args)}`);
      },
    },
    {
      name: 'is_error',
      inputSchema,
      handler: (args) => ({ content: [{ type: 'text', text: `the server saw ${line(args)}` }], isError: true }),
    },
    {
      name: 'echo_result',
      inputSchema,
      handler: (args) => ({
        content: [{ type: 'text', text: `the server saw ${line(args)}` }],
        structuredContent: { echoed: line(args) },
      }),
    },
  ];
}
