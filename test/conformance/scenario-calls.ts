/**
 * The tool calls the conformance harness makes once connected, per scenario: the calls a scenario
 * names in its context (`toolCalls`), every tool whose `x-mcp-header` annotations are valid
 * (the invalid ones are left out, as the connector does not project them), and the multi round
 * trip requests of 2026-07-28 (`input_required`, answered and retried with `inputResponses` and
 * the server's `requestState` echoed unchanged).
 */
import { invalidMcpHeaderTools, isInputRequired, type McpCallResult, type McpConnection } from '@mcpx/mcp-client';

export interface ToolCall {
  name: string;
  arguments?: Record<string, unknown>;
}

type Log = (msg: string) => void;

/**
 * Calls each named tool with the scenario's arguments, in order, passing its listed definition
 * (the client mirrors its `x-mcp-header` parameters as `Mcp-Param-*` headers from it), as the
 * proxy does.
 */
export async function callListed(conn: McpConnection, calls: readonly ToolCall[], log: Log): Promise<void> {
  const tools = new Map((await conn.listTools()).map((t) => [t.name, t]));
  for (const call of calls) {
    const tool = tools.get(call.name);
    const r = await conn.callTool(
      { name: call.name, arguments: call.arguments ?? {} },
      tool !== undefined ? { tool } : {},
    );
    log(`${call.name} → ${JSON.stringify(r.content ?? r)}`);
  }
}

/** Calls every listed tool whose `x-mcp-header` annotations are valid, with arguments fitting its schema. */
export async function callValidTools(conn: McpConnection, log: Log): Promise<void> {
  const tools = await conn.listTools();
  const invalid = new Set(invalidMcpHeaderTools(tools).map((t) => t.name));
  for (const tool of tools) {
    if (invalid.has(tool.name)) continue;
    await conn.callTool({ name: tool.name, arguments: sampleObject(tool.inputSchema) }, { tool });
    log(`called ${tool.name}`);
  }
  log(`left out ${invalid.size} tools with invalid x-mcp-header annotations`);
}

/**
 * SEP-2322: each `test_mrtr_*` tool is called; an `input_required` result is answered (another
 * tool is called in between, which must carry nothing of that flow) and the call retried with a
 * new request (a new JSON-RPC id), the answers, and the `requestState` exactly as received, or
 * none when the server sent none.
 */
export async function callWithInputRounds(conn: McpConnection, log: Log): Promise<void> {
  const tools = (await conn.listTools()).map((t) => t.name);
  const between = tools.find((n) => n.includes('unrelated'));
  for (const name of tools) {
    if (name === between) continue;
    let result: McpCallResult = await conn.callTool({ name, arguments: {} });
    for (let round = 0; isInputRequired(result); round++) {
      if (round === 3) throw new Error(`${name} keeps asking for input`);
      const { inputRequests, requestState } = result as {
        inputRequests?: Record<string, { method: string; params?: unknown }>;
        requestState?: string;
      };
      const inputResponses = Object.fromEntries(
        Object.entries(inputRequests ?? {}).map(([key, req]) => [key, answer(req)]),
      );
      if (between !== undefined) await conn.callTool({ name: between, arguments: {} });
      result = await conn.callTool({
        name,
        arguments: {},
        inputResponses,
        ...(requestState !== undefined ? { requestState } : {}),
      } as Parameters<McpConnection['callTool']>[0]);
    }
    log(`${name} → ${JSON.stringify(result.content)}`);
  }
}

/** The answer to one input request: an elicitation form accepted with values fitting its schema; roots: none. */
function answer(req: { method: string; params?: unknown }): Record<string, unknown> {
  if (req.method === 'elicitation/create') {
    const schema = (req.params as { requestedSchema?: unknown } | undefined)?.requestedSchema;
    return { action: 'accept', content: sampleObject(schema, true) };
  }
  if (req.method === 'roots/list') return { roots: [] };
  throw new Error(`no answer for an input request ${req.method}`);
}

/** An object fitting a JSON Schema's properties (all of them with `all`, else the required ones). */
function sampleObject(schema: unknown, all = false): Record<string, unknown> {
  const s = schema as
    { properties?: Record<string, { type?: unknown; default?: unknown }>; required?: string[] } | undefined;
  const out: Record<string, unknown> = {};
  for (const [key, prop] of Object.entries(s?.properties ?? {})) {
    if (!all && !(s?.required ?? []).includes(key)) continue;
    out[key] = prop.default ?? sample(prop.type);
  }
  return out;
}

function sample(type: unknown): unknown {
  switch (type) {
    case 'boolean':
      return true;
    case 'number':
    case 'integer':
      return 1;
    default:
      return 'us-west1';
  }
}
