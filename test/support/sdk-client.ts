/** The plain MCP SDK clients, as a benchmark's "direct" baselines connect them. */
// SDK v1 (2025-11-25 only): the legacy rows' direct client.
export { Client } from '@modelcontextprotocol/sdk/client/index.js';
export { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
export { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
// SDK v2 (both eras; construct with `versionNegotiation: {mode: 'auto'}`): the modern rows' direct client.
export {
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernStreamableHTTPClientTransport,
} from '@modelcontextprotocol/client';
