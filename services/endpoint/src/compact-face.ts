import { SpanKind, SpanStatusCode, type Tracer } from '@opentelemetry/api';
import { ErrorCodes, WireError } from '@mcpx/contracts';
import type { McpToolDocument } from '@mcpx/domain';
import {
  Server,
  type CallToolResult,
  type InputRequiredResult,
  type McpHttpHandler,
  type Tool,
} from '@modelcontextprotocol/server';
import type { TokenGrant } from './agent-tokens.js';
import { FaceHandlers } from './face-handlers.js';
import { errorResult } from './call-result.js';
import { declaresForms, goneOf, progressTokenOf } from './call-input.js';
import { relayedProgress } from './call-notices.js';
import type { ToolCalls } from './tool-calls.js';
import type { AgentToolSet, ToolSets } from './tool-sets.js';

/**
 * The query that asks for the compact face: `/v1/agents/<agent>/mcp?tools=compact`. A query, not
 * a token setting, so one token serves both faces and a client's configuration says which it wants.
 */
export const COMPACT_QUERY = { name: 'tools', value: 'compact' } as const;

/** The compact face's three tools, by name. */
export const CompactTool = { search: 'search', describe: 'describe', call: 'call' } as const;
export type CompactTool = (typeof CompactTool)[keyof typeof CompactTool];

/** Bounds of what a client may ask (longer is refused with `invalid_input` naming the field). */
export const COMPACT_LIMITS = {
  /** Characters of a search query. */
  queryChars: 256,
  /** Words of a query that count (the rest are ignored). */
  queryTerms: 16,
  /** Tools per search answer (`limit`), and the default. */
  maxResults: 50,
  defaultResults: 10,
  /** Names per `describe`, and characters per name. */
  describeNames: 20,
  nameChars: 256,
  /** Characters of a description in a search answer (cut with `…`; `describe` gives it whole). */
  summaryChars: 200,
} as const;

/** Whether a request asks for the compact face (`?tools=compact`). */
export function wantsCompact(url: URL): boolean {
  return url.searchParams.get(COMPACT_QUERY.name) === COMPACT_QUERY.value;
}

const SEARCH_TOOL: Tool = {
  name: CompactTool.search,
  title: 'Search tools',
  description:
    "Finds this agent's tools by words of their names, titles and descriptions (best match first). An empty query lists them all by name. " +
    'Then `describe` the ones you want and run one with `call`.',
  inputSchema: {
    type: 'object',
    properties: {
      query: {
        type: 'string',
        maxLength: COMPACT_LIMITS.queryChars,
        description: 'Words to look for; empty lists every tool.',
      },
      limit: {
        type: 'integer',
        minimum: 1,
        maximum: COMPACT_LIMITS.maxResults,
        description: `Tools to return (default ${COMPACT_LIMITS.defaultResults}).`,
      },
      offset: { type: 'integer', minimum: 0, description: 'Matches to skip (for the next page).' },
    },
    required: ['query'],
  },
  annotations: { readOnlyHint: true, openWorldHint: false },
};

const DESCRIBE_TOOL: Tool = {
  name: CompactTool.describe,
  title: 'Describe tools',
  description:
    "Gives tools' whole definitions (description, input and output schemas, annotations) by name, as `search` named them.",
  inputSchema: {
    type: 'object',
    properties: {
      names: {
        type: 'array',
        items: { type: 'string', maxLength: COMPACT_LIMITS.nameChars },
        minItems: 1,
        maxItems: COMPACT_LIMITS.describeNames,
      },
    },
    required: ['names'],
  },
  annotations: { readOnlyHint: true, openWorldHint: false },
};

const CALL_TOOL: Tool = {
  name: CompactTool.call,
  title: 'Call a tool',
  description:
    "Runs one of this agent's tools by name with its arguments (as `describe` says them) and returns the tool's own result.",
  inputSchema: {
    type: 'object',
    properties: {
      name: { type: 'string', maxLength: COMPACT_LIMITS.nameChars, description: 'The tool, as `search` named it.' },
      arguments: { type: 'object', description: "The tool's arguments." },
    },
    required: ['name'],
  },
};

/** The compact face's `tools/list`: always these three, in this order. */
export const COMPACT_TOOLS: readonly Tool[] = [SEARCH_TOOL, DESCRIBE_TOOL, CALL_TOOL];

function invalid(field: string, message: string, extra: Record<string, unknown> = {}): WireError {
  return new WireError(ErrorCodes.invalidInput, `${field}: ${message}`, { field, ...extra });
}

/** One tool as `search` returns it: what a model needs to choose, bounded. */
export interface SearchHit {
  name: string;
  title?: string;
  description: string;
  server: string;
  permission: string;
}

export interface SearchAnswer {
  tools: SearchHit[];
  /** Matches in all (the page is `offset`..`offset + tools.length`). */
  total: number;
  /** The tool set's version (changes with the set; `notifications/tools/list_changed` says when). */
  version: number;
}

/** What one document is searched by: lower-cased name (its separators as spaces), title, description. */
interface Indexed {
  doc: McpToolDocument;
  name: string;
  title: string;
  description: string;
}

/** Characters of a description that are searched (a longer one is searched by its start). */
const SEARCHED_CHARS = 4_096;
const index = new WeakMap<AgentToolSet, Indexed[]>();

function indexOf(set: AgentToolSet): Indexed[] {
  let entries = index.get(set);
  if (entries === undefined) {
    entries = set.tools.map((doc) => ({
      doc,
      name: doc.name.toLowerCase().replace(/[_\-.]+/g, ' '),
      title: (doc.title ?? '').slice(0, SEARCHED_CHARS).toLowerCase(),
      description: doc.description.slice(0, SEARCHED_CHARS).toLowerCase(),
    }));
    index.set(set, entries);
  }
  return entries;
}

/** The query's words: letters and digits of any script, lower-cased, at most `queryTerms`. */
function termsOf(query: string): string[] {
  const words = query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  return [...new Set(words)].slice(0, COMPACT_LIMITS.queryTerms);
}

function summary(text: string): string {
  return text.length <= COMPACT_LIMITS.summaryChars ? text : `${text.slice(0, COMPACT_LIMITS.summaryChars - 1)}…`;
}

/**
 * Searches an agent's set (pure: words matched as substrings, never as patterns). A word in a
 * tool's name counts 3, in its title 2, in its description 1; best first, then by name. Throws
 * `invalid_input` naming the field for arguments out of their bounds.
 */
export function searchTools(set: AgentToolSet, args: Record<string, unknown>): SearchAnswer {
  const { query, limit = COMPACT_LIMITS.defaultResults, offset = 0 } = args;
  if (typeof query !== 'string') throw invalid('query', 'must be a string');
  if (query.length > COMPACT_LIMITS.queryChars)
    throw invalid('query', `at most ${COMPACT_LIMITS.queryChars} characters`, { limit: COMPACT_LIMITS.queryChars });
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1 || limit > COMPACT_LIMITS.maxResults)
    throw invalid('limit', `an integer from 1 to ${COMPACT_LIMITS.maxResults}`, { limit: COMPACT_LIMITS.maxResults });
  if (typeof offset !== 'number' || !Number.isSafeInteger(offset) || offset < 0)
    throw invalid('offset', 'a non-negative integer');
  const terms = termsOf(query);
  let matches: Indexed[];
  if (terms.length === 0) matches = indexOf(set);
  else {
    const scored: Array<{ e: Indexed; score: number }> = [];
    for (const e of indexOf(set)) {
      let score = 0;
      for (const t of terms)
        score += (e.name.includes(t) ? 3 : 0) + (e.title.includes(t) ? 2 : 0) + (e.description.includes(t) ? 1 : 0);
      if (score > 0) scored.push({ e, score });
    }
    // Stable: equal scores keep the set's order (by name).
    scored.sort((a, b) => b.score - a.score);
    matches = scored.map((s) => s.e);
  }
  const tools = matches.slice(offset, offset + limit).map(({ doc }) => ({
    name: doc.name,
    ...(doc.title !== undefined ? { title: summary(doc.title) } : {}),
    description: summary(doc.description),
    server: doc.server,
    permission: doc.permission,
  }));
  return { tools, total: matches.length, version: set.version };
}

/** `describe`'s answer: the named tools' definitions as `tools/list` gives them, and the names the set does not have. */
export function describeTools(
  set: AgentToolSet,
  args: Record<string, unknown>,
  toTool: (doc: McpToolDocument) => Tool,
): { tools: Tool[]; unknown: string[] } {
  const { names } = args;
  if (!Array.isArray(names) || names.length === 0) throw invalid('names', 'a non-empty array of tool names');
  if (names.length > COMPACT_LIMITS.describeNames)
    throw invalid('names', `at most ${COMPACT_LIMITS.describeNames} names`, { limit: COMPACT_LIMITS.describeNames });
  const tools: Tool[] = [];
  const unknown: string[] = [];
  for (const [i, name] of names.entries()) {
    if (typeof name !== 'string' || name.length > COMPACT_LIMITS.nameChars)
      throw invalid(`names/${i}`, `a string of at most ${COMPACT_LIMITS.nameChars} characters`);
    const doc = set.byName.get(name);
    if (doc === undefined) unknown.push(name);
    else tools.push(toTool(doc));
  }
  return { tools, unknown };
}

/** The inner call of `call`: its tool name and arguments, checked for shape (the set is checked by the call). */
export function innerCall(args: Record<string, unknown>): { name: string; arguments: Record<string, unknown> } {
  const { name, arguments: inner = {} } = args;
  if (typeof name !== 'string' || name === '') throw invalid('name', 'a tool name (a non-empty string)');
  if (name.length > COMPACT_LIMITS.nameChars)
    throw invalid('name', `at most ${COMPACT_LIMITS.nameChars} characters`, { limit: COMPACT_LIMITS.nameChars });
  if (inner === null || typeof inner !== 'object' || Array.isArray(inner))
    throw invalid('arguments', 'must be an object');
  return { name, arguments: inner as Record<string, unknown> };
}

/** A local answer (search, describe) as a tool result: the JSON as text, and as `structuredContent`. */
function structured(value: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value };
}

export interface CompactFacesDeps {
  toolSets: ToolSets;
  calls: ToolCalls;
  tracer: Tracer;
  /** A token id's grant as the endpoint remembers it (the full face's), `fallback` when it does not. */
  grantOf: (tokenId: string | undefined, fallback: TokenGrant) => TokenGrant;
  /** Counts a request on `mcpx_endpoint_requests_total` (method, outcome). */
  counted: (method: string, outcome: string) => void;
  /** Expresses a tool document as an MCP tool, as the full face lists it. */
  toTool: (doc: McpToolDocument) => Tool;
  info: { name: string; version: string };
  onError: (err: Error) => void;
}

const OPTIONS = { capabilities: { tools: { listChanged: true } } };
const LIST_TTL_MS = 60_000;

/**
 * The compact face of an agent's endpoint (`?tools=compact`): three tools, `search`, `describe`
 * and `call`, over the agent's whole set, for clients that cap the number of tools (Cursor's cap
 * is 40). Served like the full face (both eras, sessionless, a handler per agent whose
 * `tools/list_changed` says the set changed, so a client searches again). `call` runs the named
 * tool through the same {@link ToolCalls} as the full face (contract, grant, approvals, input
 * requests, limits, result bounds, audit, tracing): only a tool of the agent's set runs; a direct
 * `tools/call` of one of the agent's tools works as on the full face.
 */
export class CompactFaces {
  private readonly handlers: FaceHandlers;

  constructor(
    private readonly deps: CompactFacesDeps,
    maxHandlers = 10_000,
  ) {
    this.handlers = new FaceHandlers(deps.toolSets, deps.onError, maxHandlers);
  }

  handlerFor(grant: TokenGrant): McpHttpHandler {
    return this.handlers.get(`${grant.account}:${grant.agent}`, grant.account, grant.agent, (clientId) =>
      this.server(this.deps.grantOf(clientId, grant)),
    );
  }

  close(): Promise<void> {
    return this.handlers.close();
  }

  /** `search` or `describe`, answered here from the set: a span and a count each. */
  private async local(
    grant: TokenGrant,
    tool: 'search' | 'describe',
    args: Record<string, unknown>,
  ): Promise<CallToolResult> {
    const span = this.deps.tracer.startSpan(`endpoint.compact/${tool}`, {
      kind: SpanKind.SERVER,
      attributes: { 'mcpx.account': grant.account, 'mcpx.agent': grant.agent },
    });
    let outcome = 'ok';
    try {
      const set = await this.deps.toolSets.get(grant.account, grant.agent);
      if (set === null) throw new WireError(ErrorCodes.notFound, 'the agent no longer exists', { field: 'agent' });
      if (tool === 'search') {
        const answer = searchTools(set, args);
        span.setAttribute('mcpx.compact.matches', answer.total);
        return structured({ ...answer });
      }
      return structured(describeTools(set, args, this.deps.toTool));
    } catch (err) {
      if (!(err instanceof WireError)) {
        span.recordException(err as Error);
        span.setStatus({ code: SpanStatusCode.ERROR });
        throw err;
      }
      outcome = err.code;
      span.setAttribute('mcpx.error.code', err.code);
      return errorResult(err);
    } finally {
      span.setAttribute('mcpx.outcome', outcome);
      span.end();
      this.deps.counted(`compact/${tool}`, outcome);
    }
  }

  private server(grant: TokenGrant): Server {
    const server = new Server(this.deps.info, OPTIONS);
    server.setRequestHandler('tools/list', () => {
      this.deps.counted('tools/list', 'ok');
      return { tools: [...COMPACT_TOOLS], ttlMs: LIST_TTL_MS, cacheScope: 'private' as const };
    });
    server.setNotificationHandler('notifications/cancelled', (notification) => {
      this.deps.calls.cancelled(grant, (notification.params as { requestId?: unknown } | undefined)?.requestId);
    });
    server.setRequestHandler('tools/call', async (request, ctx): Promise<CallToolResult | InputRequiredResult> => {
      const params = request.params;
      const args = params.arguments ?? {};
      if (params.name === CompactTool.search || params.name === CompactTool.describe)
        return this.local(grant, params.name, args);
      let target: { name: string; arguments: Record<string, unknown> };
      if (params.name === CompactTool.call) {
        try {
          target = innerCall(args);
        } catch (err) {
          this.deps.counted('tools/call', (err as WireError).code);
          return errorResult(err as WireError);
        }
      } else target = { name: params.name, arguments: args };
      const set = await this.deps.toolSets.get(grant.account, grant.agent);
      // Said as a tool result the model can act on (`search` finds the right name); no proxy asked.
      if (params.name === CompactTool.call && set !== null && !set.byName.has(target.name)) {
        this.deps.counted('tools/call', 'unknown_tool');
        return errorResult(
          invalid('name', `${target.name.slice(0, 128)} is not a tool of this agent; \`search\` names its tools`),
        );
      }
      const caps = server.getClientCapabilities() ?? {};
      const meta = ctx.mcpReq._meta ?? params._meta;
      const progressToken = progressTokenOf(meta);
      return this.deps.calls.call({
        grant,
        name: target.name,
        arguments: target.arguments,
        meta,
        headers: {
          traceparent: ctx.http?.req?.headers.get('traceparent'),
          tracestate: ctx.http?.req?.headers.get('tracestate'),
        },
        requestState: ctx.mcpReq.requestState?.(),
        ...(ctx.mcpReq.inputResponses !== undefined ? { inputResponses: ctx.mcpReq.inputResponses } : {}),
        caps: { elicitation: declaresForms(caps.elicitation), sampling: caps.sampling !== undefined },
        requestId: ctx.mcpReq.id,
        gone: goneOf(ctx.mcpReq.signal),
        path: 'sdk',
        ...relayedProgress(ctx.mcpReq, progressToken),
      });
    });
    return server;
  }
}
