import { invalidInput } from './errors.js';

/**
 * Tool search (SearchTools, `projector.tools.search`). Every remote server is a family
 * `mcp:<server>`; a search ranks the account's tools by name and description and answers them
 * grouped by family, the family of the best-scoring tool first.
 */

/** A query is at most this many characters (after trimming). */
export const SEARCH_QUERY_MAX_LENGTH = 256;
/** At most this many tools are returned (over all families); the default is 20. */
export const SEARCH_LIMIT_MAX = 100;
export const SEARCH_LIMIT_DEFAULT = 20;

/** `mcp:<server>`: the grammar of server names in either naming style. */
export const FAMILY_RE = /^mcp:([a-z0-9][a-z0-9_-]{0,31})$/;

/** The family of a remote server. */
export function familyOf(server: string): string {
  return `mcp:${server}`;
}

/** The server a well-formed family names, or null when `family` is not `mcp:<server>`. */
export function familyServer(family: string): string | null {
  return FAMILY_RE.exec(family)?.[1] ?? null;
}

/** Request of `projector.tools.search`. The registry has resolved `agent` to its id. */
export interface ToolSearchRequest {
  account: string;
  query: string;
  /** Only this family's tools (`mcp:<server>`). */
  family?: string;
  /** Only tools in this agent's effective set (its id). */
  agent?: string;
  limit?: number;
}

export interface ToolSearchHit {
  name: string;
  description: string;
  /** Higher is better; a match in the tool's name scores above any description-only match. */
  score: number;
  cid: string;
}

export interface ToolSearchFamily {
  family: string;
  server: string;
  tools: ToolSearchHit[];
}

/** Reply of `projector.tools.search` and SearchTools. */
export interface ToolSearchReply {
  families: ToolSearchFamily[];
}

/** The checked fields of a search: the trimmed query, the family's server, the limit. */
export interface SearchInput {
  query: string;
  server?: string;
  limit: number;
}

/**
 * Checks a search's query, family and limit (shared by the registry and the projector); throws
 * `invalid_input` naming the field.
 */
export function checkSearchInput(input: { query?: unknown; family?: unknown; limit?: unknown }): SearchInput {
  if (typeof input.query !== 'string' || input.query.trim() === '')
    throw invalidInput('query', 'must be a non-empty string');
  const query = input.query.trim();
  if (query.length > SEARCH_QUERY_MAX_LENGTH)
    throw invalidInput('query', `must be at most ${SEARCH_QUERY_MAX_LENGTH} characters`);
  let server: string | undefined;
  if (input.family !== undefined && input.family !== null) {
    server = (typeof input.family === 'string' ? familyServer(input.family) : null) ?? undefined;
    if (server === undefined) throw invalidInput('family', 'must be mcp:<server>, e.g. mcp:github');
  }
  let limit = SEARCH_LIMIT_DEFAULT;
  if (input.limit !== undefined && input.limit !== null) {
    if (
      typeof input.limit !== 'number' ||
      !Number.isInteger(input.limit) ||
      input.limit < 1 ||
      input.limit > SEARCH_LIMIT_MAX
    ) {
      throw invalidInput('limit', `must be an integer from 1 to ${SEARCH_LIMIT_MAX}`);
    }
    limit = input.limit;
  }
  return server === undefined ? { query, limit } : { query, server, limit };
}
