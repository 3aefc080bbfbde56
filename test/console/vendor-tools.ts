import type { TestTool } from '../servers/index.js';

/**
 * The `github` built-in's endpoint for the console test: tools named like its fallback list, none
 * with hints, so the name heuristic decides (`get_issue` acts, `create_issue` asks).
 */
export function vendorTools(): TestTool[] {
  const text = (t: string) => ({ content: [{ type: 'text' as const, text: t }] });
  return [
    {
      name: 'get_issue',
      description: 'Get an issue.',
      inputSchema: { type: 'object', properties: { issue_number: { type: 'number' } } },
      handler: (a) => text(`issue ${String(a.issue_number)}`),
    },
    {
      name: 'create_issue',
      description: 'Open an issue.',
      inputSchema: { type: 'object', properties: { title: { type: 'string' } } },
      handler: (a) => text(`created ${String(a.title)}`),
    },
  ];
}
