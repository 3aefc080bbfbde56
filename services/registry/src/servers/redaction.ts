import type { RedactedMcpServer, ServerStatus } from '@mcpx/contracts';
import {
  inheritPermission,
  isPermission,
  normalizeAnnotations,
  projectToolNames,
  type ToolNameStyle,
} from '@mcpx/domain';
import { effectiveAuth } from '../credentials/auth-method.js';
import type { StoredOAuthClient } from '../credentials/oauth/oauth-client-config.js';
import type { McpServerRecord } from '../catalog/mcp-servers.repository.js';
import type { ToolOverrides } from '../catalog/tool-permissions.repository.js';

/**
 * A server's status as an AGENT signer (an agent runtime, a model's side) sees it: never the
 * authorization URL, which completes the owner's OAuth for whoever opens it; instead
 * `needsOwnerAuthorization` says that only the owner can bring the server back.
 */
export type AgentServerStatus = Omit<ServerStatus, 'authorizationUrl'> & { needsOwnerAuthorization?: true };

/** Who a redacted server is shown to: an AGENT signer gets {@link AgentServerStatus}. */
export interface RedactOptions {
  builtin?: boolean;
  /**
   * The caller's role (`caller.role`). Only an OWNER sees the URL's query and fragment as stored
   * (see {@link shownUrl}); absent, the URL is redacted as for a WRITER.
   */
  role?: string;
}

const REDACTED = '[redacted]';

/**
 * A server's URL as `role` sees it. Some vendors take their key only in the query
 * (`?api_key=…`), so SetMcpServer accepts one, and the key is then a secret like a header value:
 * everyone but an OWNER sees each query value (a bare `?key` whole) and the fragment as
 * `[redacted]`, the parameter names as they are; userinfo (refused at SetMcpServer, possible in
 * older rows) is dropped. A WRITER who sends this form back in SetMcpServer keeps the stored URL
 * (`keptUrl`).
 */
export function shownUrl(url: string, role: string | undefined): string {
  if (role === 'OWNER') return url;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return '[invalid url]';
  }
  if (parsed.search === '' && parsed.hash === '' && parsed.username === '' && parsed.password === '') return url;
  parsed.username = '';
  parsed.password = '';
  if (parsed.search !== '') {
    const pairs = parsed.search.slice(1).split('&');
    parsed.search = pairs
      .map((pair) =>
        pair === '' ? '' : pair.includes('=') ? `${pair.slice(0, pair.indexOf('='))}=${REDACTED}` : REDACTED,
      )
      .join('&');
  }
  if (parsed.hash !== '') parsed.hash = REDACTED;
  return parsed.toString();
}

/**
 * The URL a SetMcpServer stores: the stored one when `given` is its redacted form (a WRITER's
 * edit that kept the URL it was shown), else `given`.
 */
export function keptUrl(given: string, previous: McpServerRecord | null): string {
  if (previous === null || given === previous.config.url) return given;
  return given === shownUrl(previous.config.url, undefined) ? previous.config.url : given;
}

/**
 * The only shape in which a server leaves the registry: header names, never header values; the
 * URL's query values only to an OWNER ({@link shownUrl}). Each tool shows its effective
 * permission: the owner's override, else the inherited level. An AGENT signer never sees the
 * status' authorization URL (see {@link AgentServerStatus}).
 */
export function redactServer(
  server: McpServerRecord,
  style: ToolNameStyle,
  overrides: ToolOverrides = {},
  opts: RedactOptions = {},
): RedactedMcpServer {
  const builtin = opts.builtin === true;
  const names = projectToolNames(
    server.name,
    server.tools.map((t) => t.name),
    style,
  );
  const secretHeaderNames = Object.keys(server.config.secretRefs ?? {});
  return {
    id: server.id,
    name: server.name,
    url: shownUrl(server.config.url, opts.role),
    transport: server.config.transport ?? null,
    headerNames: Object.keys(server.config.headers ?? {}),
    secretHeaderNames,
    hasSecrets: secretHeaderNames.length > 0,
    auth: effectiveAuth(server.config),
    ...redactOAuthClient(server.config.oauthClient),
    ...(builtin ? { builtin: true } : {}),
    ...(server.status.era !== undefined ? { era: server.status.era } : {}),
    ...(server.status.protocolVersion !== undefined ? { protocolVersion: server.status.protocolVersion } : {}),
    tools: server.tools.map((t) => ({
      name: t.name,
      toolName: names.get(t.name) ?? t.name,
      ...(t.description !== undefined ? { description: t.description } : {}),
      ...(t.inputSchema !== undefined ? { inputSchema: t.inputSchema } : {}),
      ...toolPermission(t.name, t.annotations, overrides, builtin),
    })),
    status: opts.role === 'AGENT' ? agentStatus(server.status) : server.status,
    ...(server.config.pin !== undefined && server.config.pin !== 'off'
      ? {
          pin: server.config.pin,
          pendingReviews: (server.status.heldTools ?? []).filter((h) => h.state === 'pending').length,
        }
      : {}),
    createdAt: server.createdAt.toISOString(),
    updatedAt: server.updatedAt.toISOString(),
  };
}

/** The status without its authorization URL; an `auth_required` one says the owner must authorize. */
export function agentStatus(status: ServerStatus): ServerStatus {
  const { authorizationUrl, ...rest } = status;
  const view: AgentServerStatus =
    status.state === 'auth_required' || authorizationUrl !== undefined
      ? { ...rest, needsOwnerAuthorization: true }
      : rest;
  return view;
}

/** A pre-registered OAuth client: its id and grant, and only whether a secret or key is set. */
function redactOAuthClient(client: StoredOAuthClient | undefined): Pick<RedactedMcpServer, 'oauthClient'> {
  if (client === undefined) return {};
  return {
    oauthClient: {
      clientId: client.clientId,
      grant: client.grant,
      hasClientSecret: client.credential === 'client_secret',
      hasPrivateKey: client.credential === 'private_key',
      ...(client.keyAlg !== undefined ? { keyAlg: client.keyAlg } : {}),
      ...(client.scope !== undefined ? { scope: client.scope } : {}),
    },
  };
}

function toolPermission(
  name: string,
  annotations: unknown,
  overrides: ToolOverrides,
  builtin: boolean,
): { permission: 'act' | 'always_ask'; permissionOverridden?: true; inheritedPermission: 'act' | 'always_ask' } {
  const inheritedPermission = inheritPermission(normalizeAnnotations(annotations), { builtin, toolName: name });
  const override = Object.hasOwn(overrides, name) ? overrides[name] : undefined;
  if (isPermission(override)) return { permission: override, permissionOverridden: true, inheritedPermission };
  return { permission: inheritedPermission, inheritedPermission };
}
