import { ToolNameStyle } from './types.js';
import { compareCodeUnits, serverToolPrefix } from './names.js';
import { codePointLength, truncateCodePoints, utf8ByteLength } from './utf8.js';

/** Default size of the tool part of the Space index, in UTF-8 bytes. */
export const INDEX_BUDGET_BYTES = 8192;
/** A server with more tools than this is listed as one wildcard line in the index (docs/tool-index.md#the-index). */
export const INDEX_COLLAPSE_ABOVE = 6;
/** An index or listing line shows at most this many characters of description. */
export const INDEX_DESCRIPTION_MAX_CHARS = 160;

export interface IndexedTool {
  name: string;
  description: string;
  server: string;
}

export interface RenderToolIndexOptions {
  budgetBytes?: number;
  /** Spells the wildcard of a collapsed server (`github__*` or `mcp_acme_*`); default double_underscore. */
  style?: ToolNameStyle;
}

/**
 * The remote-tool lines of the Space index, sorted by server then name:
 * `- github__create_issue — Open an issue. (github MCP)`. A server with more than six tools is one
 * line, `- github__* — 23 tools from the github MCP server (read ~/tools/ to list them)`. Over
 * `budgetBytes`, the largest remaining servers collapse too, one at a time; if that is not enough,
 * lines are cut from the end and `- … N more tools (read ~/tools/ to list them)` closes the list.
 * Lines are joined with "\n", without a trailing newline; no tools gives ''.
 */
export function renderToolIndex(docs: readonly IndexedTool[], opts: RenderToolIndexOptions = {}): string {
  const budget = opts.budgetBytes ?? INDEX_BUDGET_BYTES;
  const style = opts.style ?? ToolNameStyle.double_underscore;
  const groups = groupByServer(docs);
  const collapsed = new Set(
    [...groups].filter(([, tools]) => tools.length > INDEX_COLLAPSE_ABOVE).map(([server]) => server),
  );

  let lines = indexLines(groups, collapsed, style);
  if (joinedBytes(lines) > budget) {
    const candidates = [...groups]
      .filter(([server, tools]) => !collapsed.has(server) && tools.length > 1)
      .sort(([a, ta], [b, tb]) => tb.length - ta.length || compareCodeUnits(a, b));
    for (const [server] of candidates) {
      collapsed.add(server);
      lines = indexLines(groups, collapsed, style);
      if (joinedBytes(lines) <= budget) break;
    }
  }
  if (joinedBytes(lines) <= budget) return lines.map((l) => l.text).join('\n');

  // Keep the longest prefix that still fits together with the closing line.
  const total = lines.reduce((n, l) => n + l.tools, 0);
  let kept = 0;
  let keptBytes = 0;
  let keptTools = 0;
  for (const line of lines) {
    const bytes = keptBytes + (kept > 0 ? 1 : 0) + utf8ByteLength(line.text);
    if (bytes + 1 + utf8ByteLength(moreLine(total - keptTools - line.tools)) > budget) break;
    kept++;
    keptBytes = bytes;
    keptTools += line.tools;
  }
  return [...lines.slice(0, kept).map((l) => l.text), moreLine(total - keptTools)].join('\n');
}

/**
 * What `read ~/tools/` shows of remote tools: every tool, one `name — description` line each,
 * grouped under a `# <server> MCP server (N tools)` heading per server, groups apart by a blank line.
 * Never collapsed or cut: it is the place the index sends the model to.
 */
export function renderToolListing(docs: readonly IndexedTool[]): string {
  const blocks: string[] = [];
  for (const [server, tools] of groupByServer(docs)) {
    const lines = [`# ${server} MCP server (${plural(tools.length, 'tool')})`];
    for (const tool of tools) {
      const summary = summarizeDescription(tool.description);
      lines.push(summary === '' ? tool.name : `${tool.name} — ${summary}`);
    }
    blocks.push(lines.join('\n'));
  }
  return blocks.join('\n\n');
}

/** The first line and first sentence of a description, at most 160 characters (`…` when cut). */
export function summarizeDescription(description: string): string {
  const firstLine = (description.trim().split(/\r?\n|\r/, 1)[0] ?? '').trim();
  const sentence = /^.*?[.!?](?=\s|$)/.exec(firstLine)?.[0] ?? firstLine;
  if (codePointLength(sentence) <= INDEX_DESCRIPTION_MAX_CHARS) return sentence;
  return `${truncateCodePoints(sentence, INDEX_DESCRIPTION_MAX_CHARS - 1).trimEnd()}…`;
}

interface IndexLine {
  text: string;
  /** How many tools the line stands for. */
  tools: number;
}

function indexLines(
  groups: Map<string, IndexedTool[]>,
  collapsed: ReadonlySet<string>,
  style: ToolNameStyle,
): IndexLine[] {
  const lines: IndexLine[] = [];
  for (const [server, tools] of groups) {
    if (collapsed.has(server)) {
      lines.push({
        text: `- ${serverToolPrefix(server, style)}* — ${plural(tools.length, 'tool')} from the ${server} MCP server (read ~/tools/ to list them)`,
        tools: tools.length,
      });
      continue;
    }
    for (const tool of tools) {
      const summary = summarizeDescription(tool.description);
      lines.push({ text: `- ${tool.name}${summary === '' ? '' : ` — ${summary}`} (${server} MCP)`, tools: 1 });
    }
  }
  return lines;
}

function groupByServer(docs: readonly IndexedTool[]): Map<string, IndexedTool[]> {
  const sorted = [...docs].sort((a, b) => compareCodeUnits(a.server, b.server) || compareCodeUnits(a.name, b.name));
  const groups = new Map<string, IndexedTool[]>();
  for (const doc of sorted) {
    const group = groups.get(doc.server);
    if (group) group.push(doc);
    else groups.set(doc.server, [doc]);
  }
  return groups;
}

function moreLine(n: number): string {
  return `- … ${n} more ${n === 1 ? 'tool' : 'tools'} (read ~/tools/ to list them)`;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function joinedBytes(lines: readonly IndexLine[]): number {
  let bytes = Math.max(0, lines.length - 1);
  for (const line of lines) bytes += utf8ByteLength(line.text);
  return bytes;
}
