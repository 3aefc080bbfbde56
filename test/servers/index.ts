export { freePort } from './free-port.js';
export { everythingServerEntry, startEverythingServer, type EverythingServer } from './everything.js';
export {
  startTestMcpServer,
  type TestMcpServer,
  type TestMcpServerOptions,
  type TestMcpServerStats,
} from './mcp-test-server.js';
export {
  addTool,
  bigTextTool,
  defaultTools,
  echoTool,
  errorTool,
  imageTool,
  slowTool,
  structuredTool,
  TINY_PNG_BASE64,
  type JsonSchema,
  type TestTool,
  type TestToolExtra,
} from './test-tools.js';
