import { ErrorCodes, type WireError } from '@mcpx/contracts';
import { OMITTED_META_KEY, isErrorResult, serverMeta, type ProxyResult } from '@mcpx/domain';
import type { CallToolResult } from '@modelcontextprotocol/server';

/** `_meta` key of the connector's own fields on a result (the error, the approval to re-send with). */
export const META_ERROR = 'io.mcpx/error';
/** `_meta` key of a `tools/call` request that re-sends a call a human approved. */
export const META_APPROVAL_ID = 'io.mcpx/approvalId';
/** `_meta` key of a `tools/call` request that re-sends a call whose server's question the account owner answered. */
export const META_INPUT_REQUEST_ID = 'io.mcpx/inputRequestId';

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * The proxy's result as the MCP result the server sent (docs/endpoint.md#results): its content
 * blocks in order with their annotations and `_meta` (markers where a bound stopped one), its
 * `structuredContent`, `isError` and `_meta`, none of the connector's own keys but those it adds:
 * a server's `isError` result also carries `_meta["io.mcpx/error"]` with `server_error` and the
 * server's (bounded) text, as every failed call does. A structured result that is not an object
 * (MCP allows only objects) is named by a marker block. A proxy that does not send the whole
 * content yet answers with the flattened result: {@link flattenedToolResult}.
 */
export function callToolResult(result: ProxyResult): CallToolResult {
  if (result.content === undefined) return flattenedToolResult(result);
  const content = [...result.content] as CallToolResult['content'];
  const out: CallToolResult = { content };
  const structured = result.result;
  if (isObject(structured)) out.structuredContent = structured;
  else if (structured !== undefined) {
    content.push({
      type: 'text',
      text: '[structured result omitted: not a JSON object]',
      _meta: { [OMITTED_META_KEY]: { type: 'structuredContent', reason: 'malformed' } },
    });
  }
  const meta: Record<string, unknown> = serverMeta(result.meta) ?? {};
  if (result.isError === true) {
    out.isError = true;
    const message = isErrorResult({ isError: true, content: result.content }) ?? '';
    meta[META_ERROR] = { code: ErrorCodes.serverError, message, details: {} };
  }
  if (Object.keys(meta).length > 0) out._meta = meta;
  return out;
}

/** The runtime's flattened result as MCP content: the bounded text, the images, the structured result. */
export function flattenedToolResult(result: ProxyResult): CallToolResult {
  const content: CallToolResult['content'] = [];
  if (result.text !== undefined && result.text !== '') content.push({ type: 'text', text: result.text });
  for (const image of result.images ?? []) content.push({ type: 'image', data: image.data, mimeType: image.mimeType });
  const structured = result.result;
  return { content, ...(isObject(structured) ? { structuredContent: structured } : {}) };
}

/** What a client is told beyond the message: the fields it acts on, never anything secret. */
function hint(err: WireError): string {
  const d = err.details;
  if (err.code === ErrorCodes.approvalRequired && typeof d.approvalId === 'string') {
    const where = typeof d.decideAt === 'string' ? ` at ${d.decideAt}` : ' in the console';
    return ` The account owner decides approval ${d.approvalId}${where}; once approved, call the tool again with the same arguments: it runs once.`;
  }
  if (err.code === ErrorCodes.inputRequired && typeof d.inputRequestId === 'string') {
    return ` The account owner answers input request ${d.inputRequestId}; once answered, call the tool again with the same arguments and _meta {"${META_INPUT_REQUEST_ID}": "${d.inputRequestId}"}.`;
  }
  if (err.code === ErrorCodes.rateLimited && typeof d.retryAfterMs === 'number')
    return ` Retry after ${Math.ceil(d.retryAfterMs / 1000)} s.`;
  if (err.code === ErrorCodes.invalidArguments) {
    const errors = Array.isArray(d.errors) ? d.errors.slice(0, 20) : [];
    const contract =
      d.contract === undefined ? '' : ` The tool's input schema: ${JSON.stringify(d.contract).slice(0, 8_000)}`;
    return (errors.length > 0 ? ` Errors: ${JSON.stringify(errors).slice(0, 4_000)}.` : '') + contract;
  }
  return '';
}

/**
 * The details a client is given. A URL question is the person's (it may be a sign-in link the
 * account owner opens in the console): its URL never goes to the endpoint's client, whose host may
 * hand the result to a model.
 */
function clientDetails(err: WireError): Record<string, unknown> {
  const d = err.details;
  if (err.code !== ErrorCodes.inputRequired || !Array.isArray(d.requests)) return d;
  const requests = (d.requests as Array<Record<string, unknown>>).map((q) => {
    if (q.kind !== 'url') return q;
    const { url: _url, elicitationId: _id, ...shown } = q;
    return shown;
  });
  return { ...d, requests };
}

/**
 * A refused or failed call as a tool result with `isError` (the model reads it and can act on
 * it), never a transport failure: the text says the connector's code and message (and the approval
 * id, the retry delay or the contract), `_meta["io.mcpx/error"]` holds `{code, message, details}`.
 */
export function errorResult(err: WireError): CallToolResult {
  return {
    content: [{ type: 'text', text: `${err.code}: ${err.message}${hint(err)}` }],
    isError: true,
    _meta: { [META_ERROR]: { code: err.code, message: err.message, details: clientDetails(err) } },
  };
}
