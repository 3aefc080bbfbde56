import {
  Permission,
  TaskSupport,
  type AnthropicTool,
  type LambdaToolDocument,
  type McpToolDocument,
  type OpenAiTool,
} from '@mcpx/domain';
import { decodeRequest } from './payload-decoders.js';
import {
  anyMap,
  anyStr,
  anything,
  bool,
  checkedMap,
  int,
  jsonObject,
  list,
  num,
  oneOf,
  optional,
  shape,
  str,
  type Rule,
} from './field-rules.js';
import type {
  AgentToolsRequest,
  AgentToolsReply,
  DeleteLambdaToolRequest,
  LambdaToolReply,
  ProviderToolSet,
  SetLambdaToolRequest,
} from './payloads.js';
import type { ToolSearchReply } from './search.js';

/**
 * The decoders of the projector's request/reply endpoints, both ways: the requests it answers and
 * the values of its replies, which the registry reads (`Bus.request`'s `decodeValue`). Written in
 * the field rules of the payload decoders; a reply value that breaks one is the responder's fault
 * (the bus turns it into `internal`, naming the field).
 */

/** `projector.agent-tools.get`'s request (the handler checks the ids' grammar and the names' bounds). */
const agentToolsRequest: Rule<AgentToolsRequest> = shape({
  account: str,
  agent: str,
  requested: optional(list(anyStr)),
});

/** `projector.lambda.set`'s request (the document is checked when it is built). */
const setLambdaToolRequest: Rule<SetLambdaToolRequest> = shape({
  account: str,
  agent: str,
  name: anyStr,
  document: anything,
});

/** `projector.lambda.delete`'s request. */
const deleteLambdaToolRequest: Rule<DeleteLambdaToolRequest> = shape({ account: str, agent: str, name: anyStr });

/** A tool document: its CID is computed over the whole of it, so it is kept as sent. */
const mcpDocument: Rule<McpToolDocument & { cid: string }> = checkedMap({
  kind: oneOf('mcp'),
  name: str,
  title: optional(anyStr),
  description: anyStr,
  inputSchema: jsonObject,
  outputSchema: optional(jsonObject),
  annotations: optional(anyMap),
  permission: oneOf(Permission.act, Permission.always_ask),
  server: str,
  remoteName: str,
  taskSupport: optional(oneOf(TaskSupport.required, TaskSupport.optional)),
  _meta: optional(jsonObject),
  cid: str,
});

const lambdaDocument: Rule<LambdaToolDocument & { cid: string }> = checkedMap({
  kind: oneOf('lambda'),
  name: str,
  description: anyStr,
  inputSchema: jsonObject,
  enabled: bool,
  cid: str,
});

/** A request's decoder: strict decoding into a map (errors name `payload`), then its rule (errors name the field). */
function requestDecoder<T>(rule: Rule<T>): (bytes: Uint8Array) => T {
  return (bytes) => rule(decodeRequest(bytes), '');
}

export const decodeAgentToolsRequest = requestDecoder(agentToolsRequest);
export const decodeSetLambdaToolRequest = requestDecoder(setLambdaToolRequest);
export const decodeDeleteLambdaToolRequest = requestDecoder(deleteLambdaToolRequest);

const openAiTool: Rule<OpenAiTool> = shape({
  type: oneOf('function'),
  function: shape({ name: str, description: anyStr, parameters: jsonObject }),
});
const anthropicTool: Rule<AnthropicTool> = shape({ name: str, description: anyStr, input_schema: jsonObject });
const providerTools = { openai: list(openAiTool), anthropic: list(anthropicTool) };
const providerToolSet: Rule<ProviderToolSet> = shape(providerTools);

/** The value of `projector.agent-tools.get`'s reply. */
export const agentToolsReplyValue: Rule<AgentToolsReply> = shape({
  version: int,
  documents: list(mcpDocument),
  // A tool withheld for review (`heldBy: 'held_for_review'`) names its held contract's CID: what a reviewer accepts.
  conflicts: list(shape({ name: anyStr, server: anyStr, heldBy: anyStr, cid: optional(anyStr) })),
  lambdas: optional(list(lambdaDocument)),
  index: optional(anyStr),
  listing: optional(anyStr),
  providerTools: optional(providerToolSet),
  promoted: optional(shape({ names: list(anyStr), ...providerTools })),
});

/** The value of both lambda replies. */
export const lambdaToolReplyValue: Rule<LambdaToolReply> = shape({ name: anyStr, cid: optional(str), version: int });

/** The value of `projector.tools.search`'s reply. */
export const toolSearchReplyValue: Rule<ToolSearchReply> = shape({
  families: list(
    shape({
      family: anyStr,
      server: anyStr,
      tools: list(shape({ name: anyStr, description: anyStr, score: num, cid: anyStr })),
    }),
  ),
});
