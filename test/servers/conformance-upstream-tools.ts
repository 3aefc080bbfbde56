import {
  fromJsonSchema,
  inputRequired,
  type CallToolResult,
  type ContentBlock,
  type ElicitRequestFormParams,
  type InputRequiredResult,
  type McpServer,
  type ServerContext,
  SdkError,
  SdkErrorCode,
} from '@modelcontextprotocol/server';
import * as z from 'zod/v4';

/**
 * The tools of the conformance fixture that answer in one round: content of every kind, logging,
 * progress, an error, the 2025 era's server-to-client requests (sampling, elicitation) and the
 * diagnostic tools the `server-stateless` and `json-schema-2020-12` scenarios call by name. What
 * each returns is what the scenario checks (`@modelcontextprotocol/conformance`, server scenarios).
 */

/** A 1×1 red PNG and a minimal WAV, base64 (the scenarios check type and MIME type, not pixels). */
export const PNG_BASE64 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
const WAV_BASE64 = 'UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=';

export const NO_ARGS = z.object({});

/** What the fixture's list-change triggers publish on (the handler's listen streams). */
export interface ChangeNotifier {
  toolsChanged(): void;
  promptsChanged(): void;
}

const text = (t: string): CallToolResult => ({ content: [{ type: 'text', text: t }] });

/** Tools whose whole answer is fixed content. */
const FIXED: ReadonlyArray<{ name: string; description: string; content: ContentBlock[] }> = [
  {
    name: 'test_simple_text',
    description: 'Answers one text block',
    content: [{ type: 'text', text: 'This is a simple text response for testing.' }],
  },
  {
    name: 'test_image_content',
    description: 'Answers one PNG image block',
    content: [{ type: 'image', data: PNG_BASE64, mimeType: 'image/png' }],
  },
  {
    name: 'test_audio_content',
    description: 'Answers one WAV audio block',
    content: [{ type: 'audio', data: WAV_BASE64, mimeType: 'audio/wav' }],
  },
  {
    name: 'test_embedded_resource',
    description: 'Answers one embedded text resource',
    content: [
      {
        type: 'resource',
        resource: {
          uri: 'test://embedded-resource',
          mimeType: 'text/plain',
          text: 'This is an embedded resource content.',
        },
      },
    ],
  },
  {
    name: 'test_multiple_content_types',
    description: 'Answers text, an image and an embedded resource, in that order',
    content: [
      { type: 'text', text: 'Multiple content types test:' },
      { type: 'image', data: PNG_BASE64, mimeType: 'image/png' },
      {
        type: 'resource',
        resource: {
          uri: 'test://mixed-content-resource',
          mimeType: 'application/json',
          text: JSON.stringify({ test: 'data', value: 123 }),
        },
      },
    ],
  },
  // server-stateless: a plain call whose response stream must carry no request of the server's own.
  {
    name: 'test_streaming_elicitation',
    description: 'Answers without any server-to-client request',
    content: [{ type: 'text', text: 'stream observed: result frames only' }],
  },
];

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export function registerFixedTools(server: McpServer): void {
  for (const tool of FIXED)
    server.registerTool(tool.name, { description: tool.description, inputSchema: NO_ARGS }, () => ({
      content: tool.content,
    }));
  server.registerTool(
    'test_error_handling',
    { description: 'Fails (the SDK answers isError: true)', inputSchema: NO_ARGS },
    () => {
      throw new Error('This tool intentionally returns an error for testing');
    },
  );
  server.registerTool(
    'json_schema_2020_12_tool',
    {
      description: 'An input schema with JSON Schema 2020-12 keywords, listed verbatim',
      inputSchema: fromJsonSchema({
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        type: 'object',
        $defs: {
          address: {
            $anchor: 'addressDef',
            type: 'object',
            properties: { street: { type: 'string' }, city: { type: 'string' } },
          },
        },
        properties: {
          name: { type: 'string' },
          address: { $ref: '#/$defs/address' },
          contactMethod: { type: 'string', enum: ['phone', 'email'] },
          phone: { type: 'string' },
          email: { type: 'string' },
        },
        allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
        if: { properties: { contactMethod: { const: 'phone' } }, required: ['contactMethod'] },
        then: { required: ['phone'] },
        else: { required: ['email'] },
        additionalProperties: false,
      }),
    },
    (args) => text(`JSON Schema 2020-12 tool called with: ${JSON.stringify(args)}`),
  );
}

/** Logging and progress during a call (both eras). */
export function registerNotifyingTools(server: McpServer): void {
  server.registerTool(
    'test_tool_with_logging',
    { description: 'Sends three log messages while it runs', inputSchema: NO_ARGS },
    async (_args, ctx) => {
      for (const data of ['Tool execution started', 'Tool processing data', 'Tool execution completed']) {
        await ctx.mcpReq.notify({ method: 'notifications/message', params: { level: 'info', data } });
        await pause(20);
      }
      return text('Tool with logging executed successfully');
    },
  );
  // server-stateless: the log goes through the request's channel, which sends nothing unless the
  // request set `_meta.logLevel`.
  server.registerTool(
    'test_logging_tool',
    { description: 'Logs through the request-scoped channel', inputSchema: NO_ARGS },
    async (_args, ctx) => {
      await ctx.mcpReq.log('info', 'test_logging_tool ran');
      return text('logged through the request-scoped channel');
    },
  );
  server.registerTool(
    'test_tool_with_progress',
    { description: 'Reports progress 0, 50, 100 when the call has a progress token', inputSchema: NO_ARGS },
    async (_args, ctx) => {
      const progressToken = ctx.mcpReq._meta?.progressToken;
      // No token, no progress (the spec forbids progress the client did not ask for).
      if (progressToken !== undefined) {
        for (const progress of [0, 50, 100]) {
          await ctx.mcpReq.notify({
            method: 'notifications/progress',
            params: { progressToken, progress, total: 100, message: `Completed step ${progress} of 100` },
          });
          if (progress < 100) await pause(20);
        }
      }
      return text(String(progressToken ?? 'no-progress-token'));
    },
  );
}

/** The 2026-07-28 listen diagnostics: each publishes a list change on the open listen streams. */
export function registerTriggerTools(server: McpServer, notify: ChangeNotifier): void {
  server.registerTool(
    'test_trigger_tool_change',
    { description: 'Publishes notifications/tools/list_changed', inputSchema: NO_ARGS },
    () => {
      notify.toolsChanged();
      return text('tools_list_changed published');
    },
  );
  server.registerTool(
    'test_trigger_prompt_change',
    { description: 'Publishes notifications/prompts/list_changed', inputSchema: NO_ARGS },
    () => {
      notify.promptsChanged();
      return text('prompts_list_changed published');
    },
  );
}

/**
 * The SDK's refusal to push a request to the client while serving 2026-07-28, where a server
 * answers `input_required` instead (as a dual-era server does: the connector's proxy speaks
 * 2026-07-28 to this fixture while the endpoint's client may speak 2025).
 */
const cannotPush = (err: unknown): boolean =>
  err instanceof SdkError && err.code === SdkErrorCode.MethodNotSupportedByProtocolVersion;

async function elicited(
  ctx: ServerContext,
  params: ElicitRequestFormParams,
  label: string,
): Promise<CallToolResult | InputRequiredResult> {
  const answered = ctx.mcpReq.inputResponses?.elicitation as { action?: string; content?: unknown } | undefined;
  if (answered !== undefined)
    return text(`${label}: action=${String(answered.action)}, content=${JSON.stringify(answered.content ?? {})}`);
  try {
    // The 2025 era's push-style request.
    const result = await ctx.mcpReq.elicitInput(params);
    return text(`${label}: action=${result.action}, content=${JSON.stringify(result.content ?? {})}`);
  } catch (err) {
    if (cannotPush(err)) return inputRequired({ inputRequests: { elicitation: inputRequired.elicit(params) } });
    return text(`Elicitation not supported or error: ${err instanceof Error ? err.message : String(err)}`);
  }
}

const DEFAULTS_SCHEMA = {
  type: 'object',
  properties: {
    name: { type: 'string', description: 'User name', default: 'John Doe' },
    age: { type: 'integer', description: 'User age', default: 30 },
    score: { type: 'number', description: 'User score', default: 95.5 },
    status: { type: 'string', description: 'User status', enum: ['active', 'inactive', 'pending'], default: 'active' },
    verified: { type: 'boolean', description: 'Verification status', default: true },
  },
  required: [],
} as ElicitRequestFormParams['requestedSchema'];

const choices = (prefix: string, titles: string[]): Array<{ const: string; title: string }> =>
  titles.map((title, i) => ({ const: `${prefix}${i + 1}`, title }));

const ENUMS_SCHEMA = {
  type: 'object',
  properties: {
    untitledSingle: { type: 'string', description: 'Select one option', enum: ['option1', 'option2', 'option3'] },
    titledSingle: {
      type: 'string',
      description: 'Select one option with titles',
      oneOf: choices('value', ['First Option', 'Second Option', 'Third Option']),
    },
    legacyEnum: {
      type: 'string',
      description: 'Select one option (legacy)',
      enum: ['opt1', 'opt2', 'opt3'],
      enumNames: ['Option One', 'Option Two', 'Option Three'],
    },
    untitledMulti: {
      type: 'array',
      description: 'Select multiple options',
      minItems: 1,
      maxItems: 3,
      items: { type: 'string', enum: ['option1', 'option2', 'option3'] },
    },
    titledMulti: {
      type: 'array',
      description: 'Select multiple options with titles',
      minItems: 1,
      maxItems: 3,
      items: { anyOf: choices('value', ['First Choice', 'Second Choice', 'Third Choice']) },
    },
  },
  required: [],
} as ElicitRequestFormParams['requestedSchema'];

/** The 2025 era's server-to-client requests during a call (sampling and elicitation). */
export function registerPushTools(server: McpServer): void {
  server.registerTool(
    'test_sampling',
    { description: 'Asks the client for an LLM completion', inputSchema: z.object({ prompt: z.string() }) },
    async (args, ctx) => {
      const request = {
        messages: [{ role: 'user' as const, content: { type: 'text' as const, text: args.prompt } }],
        maxTokens: 100,
      };
      const said = (result: { content?: unknown }): CallToolResult => {
        const content = (Array.isArray(result.content) ? result.content[0] : result.content) as
          { type?: string; text?: string } | undefined;
        return text(`LLM response: ${content?.type === 'text' ? String(content.text) : 'No response'}`);
      };
      const answered = ctx.mcpReq.inputResponses?.sampling as { content?: unknown } | undefined;
      if (answered !== undefined) return said(answered);
      try {
        return said(await ctx.mcpReq.requestSampling(request));
      } catch (err) {
        if (cannotPush(err))
          return inputRequired({ inputRequests: { sampling: inputRequired.createMessage(request) } });
        return text(`Sampling not supported or error: ${err instanceof Error ? err.message : String(err)}`);
      }
    },
  );
  server.registerTool(
    'test_elicitation',
    { description: 'Asks the user for a response', inputSchema: z.object({ message: z.string() }) },
    (args, ctx) =>
      elicited(
        ctx,
        {
          message: args.message,
          requestedSchema: {
            type: 'object',
            properties: { response: { type: 'string', description: "User's response" } },
            required: ['response'],
          },
        },
        'User response',
      ),
  );
  server.registerTool(
    'test_elicitation_sep1034_defaults',
    { description: 'Elicits a form whose fields have defaults', inputSchema: NO_ARGS },
    (_args, ctx) =>
      elicited(
        ctx,
        { message: 'Please review and update the form fields with defaults', requestedSchema: DEFAULTS_SCHEMA },
        'Elicitation completed',
      ),
  );
  server.registerTool(
    'test_elicitation_sep1330_enums',
    { description: 'Elicits every enum shape', inputSchema: NO_ARGS },
    (_args, ctx) =>
      elicited(
        ctx,
        { message: 'Please select options from the enum fields', requestedSchema: ENUMS_SCHEMA },
        'Elicitation completed',
      ),
  );
}
