import { randomUUID } from 'node:crypto';
import {
  acceptedContent,
  CLIENT_CAPABILITIES_META_KEY,
  inputRequired,
  type CallToolResult,
  type ClientCapabilities,
  type InputRequest,
  type InputRequests,
  type InputRequiredResult,
  type McpServer,
  type RequestStateCodec,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { NO_ARGS } from './conformance-upstream-tools.js';

/**
 * The 2026-07-28 multi-round tools (`input_required`, SEP-2322) of the conformance fixture, under
 * the names the `input-required-result-*` and `server-stateless` scenarios call. Each answers
 * `input_required` until the retried request carries the responses it needs. `requestState` is
 * sealed by the SDK's codec (HMAC with a key of the process): the server's `requestState.verify`
 * refuses a tampered one with -32602 before a handler runs.
 */

type Answer = Promise<CallToolResult | InputRequiredResult>;
type State = Record<string, unknown>;

const text = (t: string): CallToolResult => ({ content: [{ type: 'text', text: t }] });

/** A one-field form question. */
function ask(message: string, field: string, type: 'string' | 'boolean'): InputRequest {
  const property = type === 'string' ? { type: 'string' as const } : { type: 'boolean' as const };
  return inputRequired.elicit({
    message,
    requestedSchema: { type: 'object', properties: { [field]: property }, required: [field] },
  });
}

const greet = (prompt: string): InputRequest =>
  inputRequired.createMessage({ messages: [{ role: 'user', content: { type: 'text', text: prompt } }], maxTokens: 50 });

function response<T>(ctx: ServerContext, key: string): T | undefined {
  return ctx.mcpReq.inputResponses?.[key] as T | undefined;
}

function nameOf(ctx: ServerContext, key: string): string | undefined {
  const name = acceptedContent<{ name: string }>(ctx.mcpReq.inputResponses, key)?.name;
  return typeof name === 'string' ? name : undefined;
}

export function registerInputTools(server: McpServer, codec: RequestStateCodec<State>): void {
  const seal = (state: State): Promise<string> => codec.mint({ ...state, nonce: randomUUID() });
  const tool = (name: string, description: string, run: (ctx: ServerContext) => Answer): void => {
    server.registerTool(name, { description, inputSchema: NO_ARGS }, (_args, ctx) => run(ctx));
  };

  tool('test_input_required_result_elicitation', 'Asks for the caller’s name (elicitation)', async (ctx) => {
    const name = nameOf(ctx, 'user_name');
    if (name === undefined)
      return inputRequired({ inputRequests: { user_name: ask('What is your name?', 'name', 'string') } });
    return text(`Hello, ${name}!`);
  });
  tool('test_input_required_result_sampling', 'Asks for an LLM completion (sampling)', async (ctx) => {
    const answer = response<{ content?: { text?: unknown } }>(ctx, 'capital_question');
    if (answer === undefined)
      return inputRequired({
        inputRequests: {
          capital_question: inputRequired.createMessage({
            messages: [{ role: 'user', content: { type: 'text', text: 'What is the capital of France?' } }],
            maxTokens: 100,
          }),
        },
      });
    return text(
      `Sampling response: ${typeof answer.content?.text === 'string' ? answer.content.text : JSON.stringify(answer)}`,
    );
  });
  tool('test_input_required_result_list_roots', 'Asks for the client’s roots', async (ctx) => {
    const roots = response<{ roots?: Array<{ uri?: string }> }>(ctx, 'client_roots')?.roots;
    if (!Array.isArray(roots)) return inputRequired({ inputRequests: { client_roots: inputRequired.listRoots() } });
    return text(`Client exposed ${roots.length} root(s): ${roots.map((r) => r.uri).join(', ')}`);
  });
  tool(
    'test_input_required_result_request_state',
    'Asks for a confirmation, with a sealed requestState',
    async (ctx) => {
      if (
        acceptedContent(ctx.mcpReq.inputResponses, 'confirm') === undefined ||
        ctx.mcpReq.requestState<State>() === undefined
      ) {
        return inputRequired({
          inputRequests: { confirm: ask('Please confirm', 'ok', 'boolean') },
          requestState: await seal({ tool: 'request_state' }),
        });
      }
      return text('state-ok: requestState verified and confirmation received');
    },
  );
  tool(
    'test_input_required_result_tampered_state',
    'Asks for a confirmation; a tampered requestState is refused',
    async (ctx) => {
      if (
        ctx.mcpReq.requestState<State>() !== undefined &&
        acceptedContent(ctx.mcpReq.inputResponses, 'confirm') !== undefined
      )
        return text('integrity-ok: requestState verified');
      return inputRequired({
        inputRequests: { confirm: ask('Please confirm', 'ok', 'boolean') },
        requestState: await seal({ tool: 'tampered_state' }),
      });
    },
  );
  tool(
    'test_input_required_result_multiple_inputs',
    'Asks for a name, a completion and the roots in one round',
    async (ctx) => {
      const name = nameOf(ctx, 'user_name');
      const greeting = response<{ content?: { text?: unknown } }>(ctx, 'greeting')?.content?.text;
      const roots = response<{ roots?: unknown[] }>(ctx, 'client_roots')?.roots;
      if (name === undefined || typeof greeting !== 'string' || !Array.isArray(roots)) {
        const inputRequests = {
          user_name: ask('What is your name?', 'name', 'string'),
          greeting: greet('Generate a greeting'),
          client_roots: inputRequired.listRoots(),
        };
        return inputRequired({ inputRequests, requestState: await seal({ tool: 'multiple_inputs' }) });
      }
      return text(`${greeting} ${name} — ${roots.length} root(s) visible`);
    },
  );
  tool('test_input_required_result_multi_round', 'Two rounds of questions, the round carried in requestState', (ctx) =>
    multiRound(ctx, seal),
  );
  tool(
    'test_input_required_result_capabilities',
    'Asks only for what the request’s client capabilities cover',
    async (ctx) => {
      if (ctx.mcpReq.inputResponses !== undefined) return text('Capability-aware input requests fulfilled');
      // The SDK types the envelope as an empty record; the capabilities are under their reserved key.
      const envelope = ctx.mcpReq.envelope as Record<string, ClientCapabilities | undefined> | undefined;
      const declared = envelope?.[CLIENT_CAPABILITIES_META_KEY];
      const inputRequests: InputRequests = {};
      if (declared?.elicitation !== undefined) inputRequests.user_name = ask('What is your name?', 'name', 'string');
      // `sampling` and `roots` are deprecated in 2026-07-28 but still the declared vocabulary.
      if (declared?.sampling !== undefined) inputRequests.greeting = greet('Generate a short greeting');
      if (declared?.roots !== undefined) inputRequests.client_roots = inputRequired.listRoots();
      if (Object.keys(inputRequests).length === 0)
        return text('No declared client capability supports an in-band input request');
      return inputRequired({ inputRequests });
    },
  );
  // server-stateless: called with no client capabilities, the SDK refuses the sampling question
  // with -32021 (missing capability) over HTTP 400.
  tool('test_missing_capability', 'Needs the client’s sampling capability', async (ctx) => {
    if (response(ctx, 'llm_answer') === undefined)
      return inputRequired({ inputRequests: { llm_answer: greet('Reply with the single word: pong') } });
    return text('sampling round-trip complete');
  });
}

async function multiRound(ctx: ServerContext, seal: (state: State) => Promise<string>): Answer {
  const state = ctx.mcpReq.requestState<State>();
  const round = state?.tool === 'multi_round' && typeof state.round === 'number' ? state.round : 0;
  if (round === 0)
    return inputRequired({
      inputRequests: { step1: ask('Step 1: What is your name?', 'name', 'string') },
      requestState: await seal({ tool: 'multi_round', round: 1 }),
    });
  if (round === 1) {
    const name = nameOf(ctx, 'step1') ?? 'unknown';
    return inputRequired({
      inputRequests: { step2: ask('Step 2: What is your favorite color?', 'color', 'string') },
      requestState: await seal({ tool: 'multi_round', round: 2, name }),
    });
  }
  const color = acceptedContent<{ color: string }>(ctx.mcpReq.inputResponses, 'step2')?.color ?? 'unknown';
  return text(`Multi-round complete: ${typeof state?.name === 'string' ? state.name : 'unknown'} likes ${color}`);
}

/** prompts/get answers input_required too (the non-tool-request scenario). */
export function registerInputPrompt(server: McpServer): void {
  server.registerPrompt(
    'test_input_required_result_prompt',
    { title: 'Input-required prompt', description: 'Asks for context before rendering' },
    (ctx: unknown) => {
      // Registered without arguments, the callback's only parameter is the request context.
      const context = acceptedContent<{ context: string }>(
        (ctx as ServerContext).mcpReq.inputResponses,
        'user_context',
      )?.context;
      if (typeof context !== 'string')
        return inputRequired({
          inputRequests: { user_context: ask('What context should the prompt use?', 'context', 'string') },
        });
      return { messages: [{ role: 'user', content: { type: 'text', text: `Use the following context: ${context}` } }] };
    },
  );
}
