import {
  ProtocolError,
  SdkHttpError,
  type CallToolRequest,
  type CallToolRequestOptions,
  type Client,
  type Tool,
} from '@modelcontextprotocol/client';
import { classifyMcpError, isEraFailure, McpClientError, McpClientErrorCode, type ClassifyContext } from './errors.js';
import type { CallToolOptions, McpCallResult } from './connection.js';
import { isResponseStreamBroken } from './stream-end-transport.js';

/** `traceparent`/`tracestate` of the caller's carrier, as `_meta` keys (2026-07-28 names them so). */
export function traceMeta(carrier: (() => Record<string, string>) | undefined): Record<string, string> | undefined {
  if (carrier === undefined) return undefined;
  let values: Record<string, string>;
  try {
    values = carrier();
  } catch {
    return undefined;
  }
  const meta: Record<string, string> = {};
  if (typeof values.traceparent === 'string') meta.traceparent = values.traceparent;
  if (typeof values.tracestate === 'string') meta.tracestate = values.tracestate;
  return Object.keys(meta).length === 0 ? undefined : meta;
}

type ModernCallOptions = CallToolOptions & { timeoutMs: number; meta: Record<string, string> | undefined };

/**
 * A 2026-07-28 `tools/call` through the SDK: the SDK adds the `_meta` envelope (protocol version,
 * client capabilities, client info), `Mcp-Method`/`Mcp-Name`, and, when the tool is given, its
 * `x-mcp-header` parameters as `Mcp-Param-<Name>`. The tool goes without its `outputSchema`, so
 * `structuredContent` is never validated (a pass-through); `input_required` comes back as-is.
 * A response stream that breaks after the request went out fails with `maybe_executed`.
 */
export async function modernCall(client: Client, params: CallToolRequest['params'], opts: ModernCallOptions, ctx: ClassifyContext): Promise<McpCallResult> {
  const options: CallToolRequestOptions = { timeout: opts.timeoutMs, allowInputRequired: true };
  if (opts.signal) options.signal = opts.signal;
  if (opts.onProgress || opts.resetTimeoutOnProgress) {
    options.onprogress = opts.onProgress ?? (() => {});
    options.resetTimeoutOnProgress = opts.resetTimeoutOnProgress ?? false;
  }
  const sent: CallToolRequest['params'] = opts.meta === undefined ? params : { ...params, _meta: { ...opts.meta, ...params._meta } };
  try {
    if (opts.tool !== undefined) {
      options.toolDefinition = withoutOutputSchema(opts.tool);
      return await client.callTool(sent, options);
    }
    return await client.request({ method: 'tools/call', params: sent }, options);
  } catch (error) {
    if (isResponseStreamBroken(error) && !opts.signal?.aborted) {
      throw new McpClientError(
        McpClientErrorCode.MaybeExecuted,
        'MCP response stream broke after the call was sent: the server may have executed it (2026-07-28 has no resumption); not retried',
        { transport: 'http' },
        { cause: error },
      );
    }
    throw classifyMcpError(error, opts.signal, ctx);
  }
}

function withoutOutputSchema(tool: Tool): Tool {
  if (tool.outputSchema === undefined) return tool;
  const { outputSchema: _ignored, ...rest } = tool;
  return rest;
}

/**
 * Whether a failure on a connection made from a modern prior says the prior no longer holds, and
 * proves the request was refused unrun: the server refused the version (-32022), or answered
 * like a legacy server (HTTP 400/404 for a request without a session, "not initialized").
 */
export function isStaleModernPrior(err: unknown): boolean {
  const cause = err instanceof McpClientError ? err.cause : err;
  if (isEraFailure(cause)) return true;
  if (cause instanceof SdkHttpError) return cause.status === 400 || cause.status === 404;
  return cause instanceof ProtocolError && cause.code === -32000 && /not initialized|session/i.test(cause.message);
}
