import type { RedactedMcpServer } from '@mcpx/contracts';
import { projectToolNames, type ToolNameStyle } from '@mcpx/domain';
import type { McpServerRecord } from './repositories/mcp-servers.repository.js';

/** The only shape in which a server leaves the registry: header names, never header values. */
export function redactServer(server: McpServerRecord, style: ToolNameStyle): RedactedMcpServer {
  const names = projectToolNames(
    server.name,
    server.tools.map((t) => t.name),
    style,
  );
  const secretHeaderNames = Object.keys(server.config.secretRefs ?? {});
  return {
    id: server.id,
    name: server.name,
    url: server.config.url,
    transport: server.config.transport ?? null,
    headerNames: Object.keys(server.config.headers ?? {}),
    secretHeaderNames,
    hasSecrets: secretHeaderNames.length > 0,
    tools: server.tools.map((t) => ({
      name: t.name,
      toolName: names.get(t.name) ?? t.name,
      ...(t.description !== undefined ? { description: t.description } : {}),
      ...(t.inputSchema !== undefined ? { inputSchema: t.inputSchema } : {}),
    })),
    status: server.status,
    createdAt: server.createdAt.toISOString(),
    updatedAt: server.updatedAt.toISOString(),
  };
}
