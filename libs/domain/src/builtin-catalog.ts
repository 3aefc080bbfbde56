import type { RemoteTool } from './types.js';

/**
 * A built-in server (docs/servers.md#built-in-servers): a curated MCP server at a fixed endpoint, stored as this static
 * descriptor and never as a per-account row. Its credential is borrowed from the account's
 * connection to `vendor`; until it has been discovered for an account it serves `fallbackTools`.
 */
export interface BuiltinServer {
  /** The server name agents are granted and tools are projected under; no custom server may take it. */
  slug: string;
  displayName: string;
  /** The production endpoint (the operator may override it, see {@link builtinEndpoint}). */
  endpoint: string;
  /** The vendor whose OAuth connection lends the access token. */
  vendor: string;
  fallbackTools: readonly RemoteTool[];
}

const obj = (properties: Record<string, unknown>, required: string[] = []): Record<string, unknown> => ({
  type: 'object',
  properties,
  required,
  additionalProperties: false,
});
const str = (description: string): Record<string, unknown> => ({ type: 'string', description });

const GITHUB: BuiltinServer = {
  slug: 'github',
  displayName: 'GitHub',
  endpoint: 'https://api.githubcopilot.com/mcp/',
  vendor: 'github',
  fallbackTools: [
    {
      name: 'get_issue',
      description: 'Get the details of an issue in a GitHub repository.',
      inputSchema: obj(
        {
          owner: str('Repository owner'),
          repo: str('Repository name'),
          issue_number: { type: 'number', description: 'The issue number' },
        },
        ['owner', 'repo', 'issue_number'],
      ),
      annotations: { title: 'Get issue details', readOnlyHint: true },
    },
    {
      name: 'search_repositories',
      description: 'Search for GitHub repositories.',
      inputSchema: obj(
        {
          query: str('Search query'),
          page: { type: 'number', minimum: 1 },
          perPage: { type: 'number', minimum: 1, maximum: 100 },
        },
        ['query'],
      ),
      annotations: { title: 'Search repositories', readOnlyHint: true },
    },
    {
      name: 'create_issue',
      description: 'Create a new issue in a GitHub repository.',
      inputSchema: obj(
        {
          owner: str('Repository owner'),
          repo: str('Repository name'),
          title: str('Issue title'),
          body: str('Issue body content'),
        },
        ['owner', 'repo', 'title'],
      ),
      annotations: { title: 'Open new issue', readOnlyHint: false },
    },
  ],
};

const LINEAR: BuiltinServer = {
  slug: 'linear',
  displayName: 'Linear',
  endpoint: 'https://mcp.linear.app/mcp',
  vendor: 'linear',
  fallbackTools: [
    {
      name: 'list_issues',
      description: 'List issues in the workspace, optionally filtered by team, assignee or state.',
      inputSchema: obj({
        teamId: str('Team id'),
        assigneeId: str('Assignee id'),
        state: str('State name'),
        limit: { type: 'number', minimum: 1, maximum: 250 },
      }),
      annotations: { title: 'List issues', readOnlyHint: true },
    },
    {
      name: 'get_issue',
      description: 'Retrieve a Linear issue by its id.',
      inputSchema: obj({ id: str('Issue id') }, ['id']),
      annotations: { title: 'Get issue', readOnlyHint: true },
    },
    {
      name: 'create_issue',
      description: 'Create a new Linear issue.',
      inputSchema: obj(
        { title: str('Issue title'), teamId: str('Team id'), description: str('Markdown description') },
        ['title', 'teamId'],
      ),
      annotations: { title: 'Create issue' },
    },
  ],
};

/**
 * A vendor whose OAuth connection lends built-ins their credential. Its token endpoint is where the
 * registry (never a proxy) exchanges a connection's refresh token (RFC 6749 §6) with the client id
 * and secret the operator registered with the vendor; the operator may point it elsewhere (tests).
 */
export interface BuiltinVendor {
  name: string;
  displayName: string;
  tokenEndpoint: string;
}

const VENDORS: ReadonlyMap<string, BuiltinVendor> = new Map(
  [
    { name: 'github', displayName: 'GitHub', tokenEndpoint: 'https://github.com/login/oauth/access_token' },
    { name: 'linear', displayName: 'Linear', tokenEndpoint: 'https://api.linear.app/oauth/token' },
  ].map((v) => [v.name, v]),
);

/** The vendor named `name`, if some built-in borrows its credential. */
export function findVendor(name: string): BuiltinVendor | undefined {
  return VENDORS.get(name);
}

/** A vendor's token endpoint: the operator's override (`BUILTIN_TOKEN_ENDPOINTS`, tests) else its own. */
export function vendorTokenEndpoint(vendor: BuiltinVendor, overrides: Readonly<Record<string, string>>): string {
  return Object.hasOwn(overrides, vendor.name) ? (overrides[vendor.name] as string) : vendor.tokenEndpoint;
}

/** Every built-in server, by slug. */
export const BUILTIN_SERVERS: ReadonlyMap<string, BuiltinServer> = new Map([GITHUB, LINEAR].map((b) => [b.slug, b]));

/** The built-in server named `slug`, if there is one. */
export function findBuiltin(slug: string): BuiltinServer | undefined {
  return BUILTIN_SERVERS.get(slug);
}

/** Built-ins lit up by a connection to `vendor`. */
export function builtinsOfVendor(vendor: string): BuiltinServer[] {
  return [...BUILTIN_SERVERS.values()].filter((b) => b.vendor === vendor);
}

/**
 * The id a built-in's tool documents and events carry: `builtin:<slug>:<connection id>`. There is
 * no row id; the vendor connection's id makes each connection a new incarnation (the projector
 * ignores events of an incarnation it has seen deleted), and the `builtin:` prefix never meets a
 * custom server's UUID.
 */
export function builtinServerId(slug: string, connectionId: string): string {
  return `builtin:${slug}:${connectionId}`;
}

/** Whether a server id is a built-in's (see {@link builtinServerId}). */
export function isBuiltinServerId(id: string): boolean {
  return id.startsWith('builtin:');
}

/** The slug and vendor connection id of a built-in's server id; undefined for any other id. */
export function parseBuiltinServerId(id: string): { slug: string; connectionId: string } | undefined {
  const m = /^builtin:([a-z][a-z0-9_]*):(.+)$/.exec(id);
  return m ? { slug: m[1] as string, connectionId: m[2] as string } : undefined;
}

/** A built-in's endpoint: the operator's override (`BUILTIN_ENDPOINTS`, tests) else its own. */
export function builtinEndpoint(server: BuiltinServer, overrides: Readonly<Record<string, string>>): string {
  return Object.hasOwn(overrides, server.slug) ? (overrides[server.slug] as string) : server.endpoint;
}
