// One tool call by the AI SDK's MCP client (`@ai-sdk/mcp`), as an AI SDK agent makes it: the
// tools of the server as the SDK builds them, and the named tool's `execute`. Needs Node 22 (the
// package's engines). Usage: node ai-sdk-call.mjs URL TOKEN TOOL ARGS_JSON; prints the result as JSON.
import { createMCPClient } from '@ai-sdk/mcp';

const [url, token, name, args] = process.argv.slice(2);
const client = await createMCPClient({
  transport: { type: 'http', url, headers: { authorization: `Bearer ${token}` } },
  name: 'ai-sdk-approvals',
});
try {
  const tools = await client.tools();
  const tool = tools[name];
  if (tool === undefined) throw new Error(`no tool ${name}`);
  const result = await tool.execute(JSON.parse(args), { toolCallId: 'call-1', messages: [] });
  process.stdout.write(JSON.stringify(result));
} finally {
  await client.close();
}
