import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/** JSON Schema as plain data: registered and listed unchanged. */
export type JsonSchema = Record<string, unknown>;

/** What a tool handler receives besides its arguments. */
export interface TestToolExtra {
  /** Aborted when the client cancels the request (or its session goes away). */
  signal: AbortSignal;
  /** Sends `notifications/progress` for the request's progress token (none when the client sent none). */
  progress(progress: number, total?: number, message?: string): Promise<void>;
}

/** What the remote server saw of each `hold` call, by its `tag`. */
export type HeldCalls = Map<string, { started: boolean; cancelled: boolean }>;

/** `hold {tag}` answers only after a minute, and notes in `seen` when it started and when its request is cancelled. */
export function holdTool(seen: HeldCalls, name = 'hold'): TestTool {
  return {
    name,
    inputSchema: { type: 'object', properties: { tag: { type: 'string' } }, required: ['tag'] },
    handler: async (args, { signal }) => {
      const entry = { started: true, cancelled: false };
      seen.set(String(args.tag), entry);
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(resolve, 60_000);
        const onAbort = (): void => {
          clearTimeout(timer);
          entry.cancelled = true;
          reject(new Error('cancelled'));
        };
        if (signal.aborted) onAbort();
        else signal.addEventListener('abort', onAbort, { once: true });
      });
      return text('held');
    },
  };
}

/**
 * `progress {steps, gapMs?, flood?}`: sends `steps` progress notifications (`step i of n`), `gapMs`
 * apart (250 by default), or as fast as it can with `flood`, then answers `done after <steps>`.
 */
export function progressTool(name = 'progress'): TestTool {
  return {
    name,
    inputSchema: {
      type: 'object',
      properties: { steps: { type: 'integer' }, gapMs: { type: 'integer' }, flood: { type: 'boolean' } },
      required: ['steps'],
    },
    handler: async (args, extra) => {
      const steps = Number(args.steps);
      const gap = args.flood === true ? 0 : Number(args.gapMs ?? 250);
      for (let i = 1; i <= steps; i++) {
        await extra.progress(i, steps, `step ${i} of ${steps}`);
        if (gap > 0 && i < steps) await new Promise((resolve) => setTimeout(resolve, gap));
      }
      return text(`done after ${steps}`);
    },
  };
}

/** A tool served by the test MCP server; schemas and annotations are passed through verbatim. */
export interface TestTool {
  name: string;
  description?: string;
  /** Defaults to `{type: 'object'}`. */
  inputSchema?: JsonSchema;
  outputSchema?: JsonSchema;
  annotations?: Record<string, unknown>;
  handler: (args: Record<string, unknown>, extra: TestToolExtra) => Promise<CallToolResult> | CallToolResult;
}

function text(value: string): CallToolResult {
  return { content: [{ type: 'text', text: value }] };
}

/** `echo {text}` → `echo: <text>`. */
export function echoTool(): TestTool {
  return {
    name: 'echo',
    description: 'Echo the text back.',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    handler: (args) => text(`echo: ${String(args['text'])}`),
  };
}

/** `add {a, b}` → the sum as text and as structuredContent `{sum}`. */
export function addTool(): TestTool {
  return {
    name: 'add',
    description: 'Add two numbers.',
    inputSchema: {
      type: 'object',
      properties: { a: { type: 'number' }, b: { type: 'number' } },
      required: ['a', 'b'],
    },
    outputSchema: { type: 'object', properties: { sum: { type: 'number' } }, required: ['sum'] },
    annotations: { readOnlyHint: true },
    handler: (args) => {
      const sum = Number(args['a']) + Number(args['b']);
      return { ...text(String(sum)), structuredContent: { sum } };
    },
  };
}

/** The default tool list: `echo` and `add`. */
export function defaultTools(): TestTool[] {
  return [echoTool(), addTool()];
}

/** `slow` waits `ms` before answering, and gives up as soon as the request is cancelled. */
export function slowTool(ms: number, name = 'slow'): TestTool {
  return {
    name,
    description: `Answer after ${ms} ms.`,
    inputSchema: { type: 'object' },
    handler: async (_args, { signal }) => {
      await new Promise<void>((resolve, reject) => {
        const onAbort = (): void => {
          clearTimeout(timer);
          reject(new Error('cancelled'));
        };
        const timer = setTimeout(() => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        }, ms);
        if (signal.aborted) onAbort();
        else signal.addEventListener('abort', onAbort, { once: true });
      });
      return text(`slept ${ms} ms`);
    },
  };
}

/** `big_text` answers with one text block of exactly `bytes` ASCII characters. */
export function bigTextTool(bytes: number, name = 'big_text'): TestTool {
  return {
    name,
    description: `Return ${bytes} bytes of text.`,
    inputSchema: { type: 'object' },
    handler: () => text('x'.repeat(bytes)),
  };
}

/** A 1×1 transparent PNG. */
export const TINY_PNG_BASE64 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';

/** `image` answers with a caption and a tiny PNG. */
export function imageTool(name = 'image'): TestTool {
  return {
    name,
    description: 'Return a tiny PNG.',
    inputSchema: { type: 'object' },
    handler: () => ({
      content: [
        { type: 'text', text: 'a tiny image' },
        { type: 'image', data: TINY_PNG_BASE64, mimeType: 'image/png' },
      ],
    }),
  };
}

/** `fail` answers with a server-reported tool error (`isError: true`). */
export function errorTool(message = 'the tool failed', name = 'fail'): TestTool {
  return {
    name,
    description: 'Always report an error.',
    inputSchema: { type: 'object' },
    handler: () => ({ ...text(message), isError: true }),
  };
}

/**
 * `structured` declares the output schema `{count: number}` and answers with `structuredContent`.
 * The default content `{count: 'three'}` deliberately disagrees with the schema, so a pass-through
 * client can be checked not to validate it.
 */
export function structuredTool(
  structuredContent: Record<string, unknown> = { count: 'three' },
  name = 'structured',
): TestTool {
  return {
    name,
    description: 'Return structured content.',
    inputSchema: { type: 'object' },
    outputSchema: { type: 'object', properties: { count: { type: 'number' } }, required: ['count'] },
    handler: () => ({ ...text(JSON.stringify(structuredContent)), structuredContent }),
  };
}
