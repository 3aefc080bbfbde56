/** What a failed connect is reported as: the SDK's and the network's failures told apart, typed and scrubbed. */
import { ProtocolError, SdkError, SdkErrorCode, UnauthorizedError } from '@modelcontextprotocol/client';
import { socketErrorCode } from './connect-failure.js';
import {
  httpStatusOf,
  isEraFailure,
  McpClientError,
  McpClientErrorCode,
  fetchRejectionText,
  networkCause,
  redactUrl,
  scrub,
  UNSUPPORTED_PROTOCOL_VERSION,
  type McpClientErrorDetails,
} from './errors.js';
import { redactErrorChain } from './scrub.js';
import type { McpTransportKind } from './mcp-connection.js';
import type { FetchObservations } from './tracked-fetch.js';

export interface ConnectErrorContext {
  kind: McpTransportKind;
  url: URL;
  /** The caller's signal: aborted, the connect was cancelled. */
  signal: AbortSignal | undefined;
  /** The connect's deadline: aborted, it timed out. */
  deadline: AbortSignal;
  timeoutMs: number;
  observations: FetchObservations;
  secrets: readonly string[];
}

/** The typed, secret-free error a failed connect ends with, naming what failed where. */
export async function connectError(err: unknown, ctx: ConnectErrorContext): Promise<McpClientError> {
  const where = `MCP connect to ${redactUrl(ctx.url)} (${ctx.kind === 'http' ? 'Streamable HTTP' : 'SSE'})`;
  const base: McpClientErrorDetails = { transport: ctx.kind };
  const cause = { cause: err };
  // The SDK's errors carry the server's text as it came, and a log line writes an error's causes.
  redactErrorChain(err, ctx.secrets);
  redactErrorChain(ctx.observations.lastNetworkError, ctx.secrets);
  if (ctx.signal?.aborted) {
    return new McpClientError(McpClientErrorCode.Cancelled, `${where} cancelled`, base, cause);
  }
  if (ctx.deadline.aborted) {
    return new McpClientError(McpClientErrorCode.Timeout, `${where} timed out after ${ctx.timeoutMs} ms`, base, cause);
  }
  if (err instanceof McpClientError) return err;
  const network = networkCause(err) ?? fetchRejectionText(ctx.observations.lastNetworkError);
  if (err instanceof SdkError && isEraFailure(err) && network === undefined) {
    return new McpClientError(
      McpClientErrorCode.EraNegotiationFailed,
      `${where} failed: ${responseText(err, ctx.secrets)}`,
      base,
      cause,
    );
  }
  const status = httpStatusOf(err);
  if (err instanceof UnauthorizedError || status === 401) {
    const details: McpClientErrorDetails = { ...base, status: 401 };
    if (ctx.observations.wwwAuthenticate !== undefined) details.wwwAuthenticate = ctx.observations.wwwAuthenticate;
    return new McpClientError(
      McpClientErrorCode.Unauthorized,
      `${where} failed: HTTP 401 Unauthorized`,
      details,
      cause,
    );
  }
  if (status !== undefined) {
    // The probe reports a failed server/discover by status alone: the server's body says more.
    const probeBody =
      err instanceof SdkError && err.code === SdkErrorCode.EraNegotiationFailed
        ? await ctx.observations.lastErrorBody
        : undefined;
    const body = withoutHtml(
      probeBody !== undefined ? scrub(probeBody.trim(), ctx.secrets) : responseText(err, ctx.secrets),
    );
    return new McpClientError(
      McpClientErrorCode.ConnectFailed,
      `${where} failed: HTTP ${status}${body ? ` (${body})` : ''}`,
      { ...base, status },
      cause,
    );
  }
  if (network !== undefined) {
    const socketCode = socketErrorCode(err) ?? socketErrorCode(ctx.observations.lastNetworkError);
    return new McpClientError(
      McpClientErrorCode.ConnectFailed,
      `${where} failed: ${scrub(network, ctx.secrets)}`,
      socketCode !== undefined ? { ...base, socketCode } : base,
      cause,
    );
  }
  if (err instanceof ProtocolError) {
    const code =
      err.code === UNSUPPORTED_PROTOCOL_VERSION
        ? McpClientErrorCode.EraNegotiationFailed
        : McpClientErrorCode.ConnectFailed;
    return new McpClientError(
      code,
      `${where} failed: server error ${err.code}: ${responseText(err, ctx.secrets)}`,
      { ...base, mcpCode: err.code },
      cause,
    );
  }
  return new McpClientError(
    McpClientErrorCode.ConnectFailed,
    `${where} failed: ${responseText(err, ctx.secrets)}`,
    base,
    cause,
  );
}

/** A web page where an MCP answer was expected: named, never shown (its markup is noise on one line). */
function withoutHtml(body: string): string {
  return /^(<!doctype html|<html|<head|<body|<\?xml)|<\/(html|body|head|title|p|h1|pre)>/i.test(body)
    ? 'an HTML page, not an MCP answer'
    : body;
}

/** The SDK error's text without its prefixes: for an HTTP error, the server's response body. */
function responseText(err: unknown, secrets: readonly string[]): string {
  const raw = err instanceof Error ? err.message : String(err);
  return scrub(
    raw
      .replace(/^(Streamable HTTP error|SSE error|MCP error -?\d+): /, '')
      .replace(/^Error POSTing to endpoint( \(HTTP \d+\))?: ?/, '')
      .replace(/^Version negotiation failed: ?/, '')
      .replace(/^Non-200 status code \(\d+\)$/, '')
      .trim(),
    secrets,
  );
}
