export { freePort } from './free-port.js';
export {
  InMemoryOAuthProvider,
  startOAuthServer,
  startProtectedMcpServer,
  TEST_OAUTH_USER,
  type TestOAuthServer,
  type TestOAuthServerOptions,
  type TestOAuthServerStats,
} from './oauth-server.js';
export { ClientCredentialsGrant, type ClientAuthMethod, type MachineClient } from './client-credentials-grant.js';
export { everythingServerEntry, startEverythingServer, type EverythingServer } from './everything.js';
export {
  startTestMcpServer,
  type TestMcpServer,
  type TestMcpServerOptions,
  type TestMcpServerStats,
} from './mcp-test-server.js';
export { chainTool, deepArguments, deepSchema, deepSchemaTool, screenshotTool } from './schema-rule-tools.js';
export {
  addTool,
  bigTextTool,
  defaultTools,
  echoTool,
  errorTool,
  holdTool,
  imageTool,
  progressTool,
  slowTool,
  structuredTool,
  TINY_PNG_BASE64,
  type JsonSchema,
  type TestTool,
  type TestToolExtra,
  type HeldCalls,
} from './test-tools.js';
