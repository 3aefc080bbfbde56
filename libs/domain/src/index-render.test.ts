import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { ToolNameStyle } from './types.js';
import { renderToolIndex, renderToolListing, summarizeDescription } from './index-render.js';
import type { IndexedTool } from './index-render.js';
import { utf8ByteLength } from './utf8.js';

const tools = (server: string, n: number, description = 'Does a thing. More detail.'): IndexedTool[] =>
  Array.from({ length: n }, (_, i) => ({ server, name: `${server}__tool_${String(i).padStart(2, '0')}`, description }));

describe('renderToolIndex', () => {
  it('renders the index line (docs/tool-index.md) for each tool, sorted by server then name', () => {
    const out = renderToolIndex([
      { server: 'linear', name: 'linear__list', description: '' },
      { server: 'github', name: 'github__list_repos', description: 'List repositories.\nPaginated.' },
      { server: 'github', name: 'github__create_issue', description: 'Open an issue. Needs a title.' },
    ]);
    expect(out).toBe(
      [
        '- github__create_issue — Open an issue. (github MCP)',
        '- github__list_repos — List repositories. (github MCP)',
        '- linear__list (linear MCP)',
      ].join('\n'),
    );
    expect(renderToolIndex([])).toBe('');
  });

  it('collapses a server with more than six tools', () => {
    expect(renderToolIndex(tools('small', 6)).split('\n')).toHaveLength(6);
    expect(renderToolIndex([...tools('github', 23), ...tools('alpha', 1)])).toBe(
      '- alpha__tool_00 — Does a thing. (alpha MCP)\n' +
        '- github__* — 23 tools from the github MCP server (read ~/tools/ to list them)',
    );
    expect(renderToolIndex(tools('acme', 7), { style: ToolNameStyle.prefixed })).toBe(
      '- mcp_acme_* — 7 tools from the acme MCP server (read ~/tools/ to list them)',
    );
  });

  it('collapses the largest servers first when over budget', () => {
    const docs = [...tools('aaa', 3), ...tools('bbb', 5), ...tools('ccc', 2)];
    const full = renderToolIndex(docs, { budgetBytes: 100_000 });
    expect(full.split('\n')).toHaveLength(10);
    const out = renderToolIndex(docs, { budgetBytes: utf8ByteLength(full) - 1 });
    expect(out).toContain('- bbb__* — 5 tools from the bbb MCP server');
    expect(out).toContain('- aaa__tool_00');
    expect(out).toContain('- ccc__tool_00');
  });

  it('cuts with a closing line when collapsing is not enough', () => {
    const docs = Array.from({ length: 40 }, (_, i) => ({
      server: `s${String(i).padStart(2, '0')}`,
      name: `s${i}__x`,
      description: 'A tool.',
    }));
    const out = renderToolIndex(docs, { budgetBytes: 300 });
    const lines = out.split('\n');
    const kept = lines.length - 1;
    expect(lines.at(-1)).toBe(`- … ${40 - kept} more tools (read ~/tools/ to list them)`);
    expect(utf8ByteLength(out)).toBeLessThanOrEqual(300);
  });

  it('fits any budget that can hold the closing line, and accounts for every tool', () => {
    const server = fc.constantFrom('a', 'b', 'c', 'dd');
    const doc = fc.record({
      server,
      name: fc.string({ minLength: 1, maxLength: 20 }),
      description: fc.string({ maxLength: 200 }),
    });
    fc.assert(
      fc.property(fc.array(doc, { maxLength: 40 }), fc.integer({ min: 60, max: 3000 }), (docs, budget) => {
        const out = renderToolIndex(docs, { budgetBytes: budget });
        if (docs.length === 0) return;
        expect(utf8ByteLength(out)).toBeLessThanOrEqual(budget);
        let counted = 0;
        for (const line of out.split('\n')) {
          const collapsed = / — (\d+) tools from the /.exec(line);
          const more = /^- … (\d+) more tools?/.exec(line);
          counted += collapsed ? Number(collapsed[1]) : more ? Number(more[1]) : 1;
        }
        expect(counted).toBe(docs.length);
      }),
    );
  });
});

describe('renderToolListing', () => {
  it('lists every tool, grouped by server, never collapsed', () => {
    const out = renderToolListing([...tools('zed', 1, ''), ...tools('github', 23)]);
    const lines = out.split('\n');
    expect(lines[0]).toBe('# github MCP server (23 tools)');
    expect(lines[1]).toBe('github__tool_00 — Does a thing.');
    expect(lines.filter((l) => l.startsWith('github__'))).toHaveLength(23);
    expect(out.endsWith('\n\n# zed MCP server (1 tool)\nzed__tool_00')).toBe(true);
  });
});

describe('summarizeDescription', () => {
  it('keeps the first sentence of the first line, at most 160 characters', () => {
    expect(summarizeDescription('  Open an issue. Then more.')).toBe('Open an issue.');
    expect(summarizeDescription('Version 1.2 is out! Really')).toBe('Version 1.2 is out!');
    expect(summarizeDescription('No period\nsecond line')).toBe('No period');
    const long = summarizeDescription('w'.repeat(500));
    expect([...long]).toHaveLength(160);
    expect(long.endsWith('…')).toBe(true);
  });
});
