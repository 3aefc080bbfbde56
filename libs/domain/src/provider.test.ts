import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { McpToolDocument } from './types.js';
import { promotableTools, toAnthropicTool, toOpenAiTool } from './provider.js';

const doc: McpToolDocument = {
  kind: 'mcp',
  name: 'github__create_issue',
  description: 'Open an issue.',
  permission: 'act',
  server: 'github',
  remoteName: 'create_issue',
  inputSchema: { type: 'object', properties: { title: { type: 'string' } }, required: ['title'] },
};

describe('provider tools', () => {
  it('hands the provider the name, description and full schema', () => {
    expect(toOpenAiTool(doc)).toEqual({
      type: 'function',
      function: { name: 'github__create_issue', description: 'Open an issue.', parameters: doc.inputSchema },
    });
    expect(toAnthropicTool(doc)).toEqual({
      name: 'github__create_issue',
      description: 'Open an issue.',
      input_schema: doc.inputSchema,
    });
  });

  it('never sends an empty description', () => {
    expect(toAnthropicTool({ ...doc, description: '', title: 'Create issue' }).description).toBe('Create issue');
    expect(toOpenAiTool({ ...doc, description: '' }).function.description).toBe(
      'create_issue on the github MCP server',
    );
  });
});

describe('promotableTools', () => {
  const own = [
    { name: 'my_lambda', kind: 'lambda', enabled: true },
    { name: 'off_lambda', kind: 'lambda', enabled: false },
    { name: 'read', kind: 'builtin', enabled: true },
  ];

  it('admits enabled callable names and own enabled non-builtin documents only', () => {
    const callable = new Set(['github__create_issue', 'call']);
    expect(
      promotableTools(callable, own, [
        'github__create_issue',
        'my_lambda',
        'off_lambda',
        'read',
        'made_up__tool',
        'github__create_issue',
      ]),
    ).toEqual(['github__create_issue', 'my_lambda']);
  });

  it('never returns a name that is in neither set', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.string()), fc.array(fc.string()), (callable, requested) => {
        const allowed = new Set(callable);
        for (const name of promotableTools(allowed, own, requested)) {
          expect(allowed.has(name) || name === 'my_lambda').toBe(true);
          expect(requested).toContain(name);
        }
      }),
    );
  });
});
