import type { TestTool } from './test-tools.js';

/** The arguments a tool received, as its one text block: a test reads what was sent upstream. */
function received(args: Record<string, unknown>): { content: Array<{ type: 'text'; text: string }> } {
  return { content: [{ type: 'text', text: `received ${JSON.stringify(args)}` }] };
}

/**
 * Playwright MCP's `take_screenshot` as that server lists it: `type` and `scale` have a default
 * and are listed as required all the same; the server accepts `{"type":"png"}`. This one answers
 * with the arguments it received, so a test sees whether the default was sent.
 */
export function screenshotTool(name = 'take_screenshot', annotations?: Record<string, unknown>): TestTool {
  return {
    name,
    description: 'Take a screenshot of the current page.',
    inputSchema: {
      type: 'object',
      properties: {
        type: {
          type: 'string',
          enum: ['png', 'jpeg'],
          default: 'png',
          description: 'Image format for the screenshot.',
        },
        scale: { type: 'string', enum: ['css', 'device'], default: 'css', description: 'Scale of the screenshot.' },
        filename: { type: 'string', description: 'File name to save the screenshot to.' },
        fullPage: { type: 'boolean', description: 'Take a screenshot of the full scrollable page.' },
      },
      required: ['type', 'scale'],
      additionalProperties: false,
      $schema: 'http://json-schema.org/draft-07/schema#',
    },
    ...(annotations !== undefined ? { annotations } : {}),
    handler: received,
  };
}

/** `levels` levels of object properties `n`, the innermost with a required string `leaf`. */
export function deepSchema(levels: number): Record<string, unknown> {
  let schema: Record<string, unknown> = {
    type: 'object',
    properties: { leaf: { type: 'string', minLength: 1 } },
    required: ['leaf'],
  };
  for (let i = 1; i < levels; i++) schema = { type: 'object', properties: { n: schema }, required: ['n'] };
  return schema;
}

/** Arguments that follow {@link deepSchema}`(levels)` down to `leaf`. */
export function deepArguments(levels: number, leaf: Record<string, unknown>): Record<string, unknown> {
  let value = leaf;
  for (let i = 1; i < levels; i++) value = { n: value };
  return value;
}

/** A tool whose input schema nests `levels` levels of object properties (81 levels of JSON for 40). */
export function deepSchemaTool(levels = 40, name = 'deep'): TestTool {
  return {
    name,
    description: `A tool whose input nests ${levels} levels.`,
    inputSchema: deepSchema(levels),
    handler: received,
  };
}

/**
 * A hostile schema: an `n`-deep `$ref` chain under property `a`. `$defs` is an array so even a
 * 10,000-deep chain fits in the 256 KiB a tool document keeps (`#/$defs/9999` indexes it).
 */
export function chainTool(name: string, n: number): TestTool {
  return {
    name,
    inputSchema: {
      type: 'object',
      properties: { a: { $ref: '#/$defs/0' } },
      $defs: [...Array.from({ length: n }, (_, i) => ({ $ref: `#/$defs/${i + 1}` })), { type: 'string' }],
    },
    handler: () => ({ content: [{ type: 'text', text: `${name} ran` }] }),
  };
}
