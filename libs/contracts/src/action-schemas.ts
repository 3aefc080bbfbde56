import type { ActionRole, JsonSchema } from './action-types.js';

/**
 * The pieces the action API's JSON Schemas are written with (`ACTION_MAP`'s requests and
 * responses, and the components they refer to): plain data, the dialect of OpenAPI 3.1.
 */
export const str: JsonSchema = { type: 'string' };
export const int: JsonSchema = { type: 'integer' };
export const bool: JsonSchema = { type: 'boolean' };
export const anyObject: JsonSchema = { type: 'object' };
export const arr = (items: JsonSchema): JsonSchema => ({ type: 'array', items });
export const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });
export const obj = (properties: Record<string, JsonSchema>, required: string[] = []): JsonSchema =>
  required.length > 0 ? { type: 'object', properties, required } : { type: 'object', properties };
export const agent: JsonSchema = { type: 'string', description: 'An agent id or name' };
export const ALL: readonly ActionRole[] = ['OWNER', 'WRITER', 'AGENT'];
export const WRITERS: readonly ActionRole[] = ['OWNER', 'WRITER'];
export const OWNER: readonly ActionRole[] = ['OWNER'];
export const nothing = obj({});
/** A brokered task as the task actions show it (`TaskView`): never its arguments, result or credentials. */
export const taskView = obj(
  {
    id: str,
    agent: str,
    run: str,
    server: str,
    tool: str,
    state: { enum: ['working', 'input_required', 'completed', 'failed', 'cancelled', 'expired'] },
    statusMessage: str,
    dialect: str,
    inputRequestId: str,
    error: obj({ code: str, message: str }, ['code', 'message']),
    resultReady: bool,
    createdAt: str,
    updatedAt: str,
    expiresAt: str,
    finishedAt: str,
  },
  ['id', 'agent', 'run', 'server', 'tool', 'state', 'dialect', 'resultReady', 'createdAt', 'updatedAt', 'expiresAt'],
);
export const review = obj({ server: str, tool: str, cid: str }, ['server', 'tool', 'cid']);
export const reviewed = obj(
  { server: str, tool: str, cid: str, decision: { enum: ['accepted', 'rejected'] }, withheld: bool },
  ['server', 'tool', 'cid', 'decision'],
);
export const discovered = { server: ref('RedactedMcpServer'), authorizationUrl: str, authorizationError: str };
export const level: JsonSchema = { enum: ['act', 'always_ask'] };
export const providerTools = { openai: arr(anyObject), anthropic: arr(anyObject) };

/** Schemas the action schemas refer to. */
export const ACTION_COMPONENTS: Record<string, JsonSchema> = {
  Role: { enum: ['OWNER', 'WRITER', 'AGENT'] },
  AgentTokenView: obj(
    {
      id: str,
      agent: str,
      name: str,
      createdAt: str,
      expiresAt: { type: ['string', 'null'] },
      revokedAt: { type: ['string', 'null'] },
      state: { enum: ['active', 'expired', 'revoked'] },
      userMayApprove: bool,
    },
    ['id', 'agent', 'name', 'createdAt', 'expiresAt', 'revokedAt', 'state', 'userMayApprove'],
  ),
  AgentDefinition: obj({ mcpServers: arr(str), inputs: obj({ forms: { enum: ['person', 'runtime'] } }) }, [
    'mcpServers',
  ]),
  AgentView: obj(
    {
      id: str,
      name: str,
      definition: ref('AgentDefinition'),
      grants: obj({ mcpServers: arr(str) }, ['mcpServers']),
      createdAt: str,
      updatedAt: str,
    },
    ['id', 'name', 'definition', 'grants', 'createdAt', 'updatedAt'],
  ),
  McpServerConfigInput: obj(
    {
      url: { type: 'string', format: 'uri' },
      transport: str,
      headers: { type: 'object', additionalProperties: str },
      secretHeaders: { type: 'object', additionalProperties: str, writeOnly: true },
      secretRefs: { type: 'object', additionalProperties: str },
      auth: { enum: ['oauth', 'bearer', 'headers', 'none'] },
      token: { type: 'string', writeOnly: true },
      oauth: obj(
        {
          clientId: str,
          clientSecret: { type: 'string', writeOnly: true },
          grant: { enum: ['authorization_code', 'client_credentials'] },
          privateKey: { type: 'string', writeOnly: true },
          keyAlg: str,
          scope: str,
        },
        ['clientId'],
      ),
      pin: { enum: ['off', 'review', 'strict'] },
    },
    ['url'],
  ),
  CallView: obj(
    {
      id: str,
      at: str,
      agent: obj({ id: str, name: str }, ['id']),
      run: str,
      callId: str,
      server: str,
      tool: str,
      code: str,
      outcome: { enum: ['ok', 'refused', 'error', 'lost'] },
      durationMs: int,
      era: { enum: ['modern', 'legacy'] },
      approvalId: str,
      inputRequestId: str,
      taskId: str,
    },
    ['id', 'at', 'agent', 'run', 'callId', 'tool', 'code', 'outcome', 'durationMs'],
  ),
  CallFigures: obj(
    {
      calls: int,
      failed: int,
      errorRate: { type: 'number' },
      p50Ms: { type: ['integer', 'null'] },
      p95Ms: { type: ['integer', 'null'] },
    },
    ['calls', 'failed', 'errorRate', 'p50Ms', 'p95Ms'],
  ),
  RedactedMcpServer: obj(
    {
      id: str,
      name: str,
      url: str,
      transport: { type: ['string', 'null'] },
      headerNames: arr(str),
      secretHeaderNames: arr(str),
      hasSecrets: bool,
      auth: { enum: ['oauth', 'bearer', 'headers', 'none'] },
      builtin: bool,
      era: { enum: ['modern', 'legacy'] },
      protocolVersion: str,
      tools: arr(anyObject),
      status: anyObject,
      pin: { enum: ['off', 'review', 'strict'] },
      pendingReviews: int,
      createdAt: str,
      updatedAt: str,
    },
    ['id', 'name', 'url', 'tools', 'status', 'createdAt', 'updatedAt'],
  ),
};
