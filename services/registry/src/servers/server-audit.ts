import { safeUrlForTelemetry } from '@mcpx/telemetry';
import type { McpServerRecord } from '../catalog/mcp-servers.repository.js';
import { effectiveAuth } from '../credentials/auth-method.js';

/**
 * A server as the audit log keeps it: where it points (the URL without credentials, query or
 * fragment), how it authenticates and which headers it sends (names only), its pin. Never a
 * header value, a token or a client secret.
 */
export function auditServer(server: McpServerRecord | null | undefined): Record<string, unknown> | null {
  if (server === null || server === undefined) return null;
  return {
    url: safeUrlForTelemetry(server.config.url),
    ...(server.config.transport !== undefined ? { transport: server.config.transport } : {}),
    auth: effectiveAuth(server.config),
    headerNames: Object.keys(server.config.headers ?? {}).sort(),
    secretHeaderNames: Object.keys(server.config.secretRefs ?? {}).sort(),
    ...(server.config.oauthClient !== undefined ? { oauthClientId: server.config.oauthClient.clientId } : {}),
    pin: server.config.pin ?? 'off',
  };
}
