/** The plain MCP SDK client, as a benchmark's "direct" baseline connects it. */
export { Client } from '@modelcontextprotocol/sdk/client/index.js';
export { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
export { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
