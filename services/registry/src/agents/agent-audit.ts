/** An agent as the audit log keeps it: its name and grants. */
export function auditAgent(
  agent: { name: string; definition: { mcpServers: string[] } } | null | undefined,
): Record<string, unknown> | null {
  if (agent === null || agent === undefined) return null;
  return { name: agent.name, mcpServers: [...agent.definition.mcpServers] };
}
