import {
  Permission,
  TaskSupport,
  type AnthropicTool,
  type LambdaToolDocument,
  type McpToolDocument,
  type OpenAiTool,
} from '@mcpx/domain';
import { decodeRequest } from './payload-decoders.js';
import * as R from './field-rules.js';
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
const agentToolsRequest: R.Rule<AgentToolsRequest> = R.shape({
  account: R.str,
  agent: R.str,
  requested: R.optional(R.list(R.anyStr)),
});

/** `projector.lambda.set`'s request (the document is checked when it is built). */
const setLambdaToolRequest: R.Rule<SetLambdaToolRequest> = R.shape({
  account: R.str,
  agent: R.str,
  name: R.anyStr,
  document: R.anything,
  cid: R.optional(R.str),
});

/** `projector.lambda.delete`'s request. */
const deleteLambdaToolRequest: R.Rule<DeleteLambdaToolRequest> = R.shape({
  account: R.str,
  agent: R.str,
  name: R.anyStr,
});

/** A tool document: its CID is computed over the whole of it, so it is kept as sent. */
const mcpDocument: R.Rule<McpToolDocument & { cid: string }> = R.checkedMap({
  kind: R.oneOf('mcp'),
  name: R.str,
  title: R.optional(R.anyStr),
  description: R.anyStr,
  inputSchema: R.jsonObject,
  outputSchema: R.optional(R.jsonObject),
  annotations: R.optional(R.anyMap),
  permission: R.oneOf(Permission.act, Permission.always_ask),
  server: R.str,
  remoteName: R.str,
  taskSupport: R.optional(R.oneOf(TaskSupport.required, TaskSupport.optional)),
  _meta: R.optional(R.jsonObject),
  cid: R.str,
});

const lambdaDocument: R.Rule<LambdaToolDocument & { cid: string }> = R.checkedMap({
  kind: R.oneOf('lambda'),
  name: R.str,
  description: R.anyStr,
  inputSchema: R.jsonObject,
  enabled: R.bool,
  cid: R.str,
});

/** A request's decoder: strict decoding into a map (errors name `payload`), then its rule (errors name the field). */
function requestDecoder<T>(rule: R.Rule<T>): (bytes: Uint8Array) => T {
  return (bytes) => rule(decodeRequest(bytes), '');
}

export const decodeAgentToolsRequest = requestDecoder(agentToolsRequest);
export const decodeSetLambdaToolRequest = requestDecoder(setLambdaToolRequest);
export const decodeDeleteLambdaToolRequest = requestDecoder(deleteLambdaToolRequest);

const openAiTool: R.Rule<OpenAiTool> = R.shape({
  type: R.oneOf('function'),
  function: R.shape({ name: R.str, description: R.anyStr, parameters: R.jsonObject }),
});
const anthropicTool: R.Rule<AnthropicTool> = R.shape({
  name: R.str,
  description: R.anyStr,
  input_schema: R.jsonObject,
});
const providerTools = { openai: R.list(openAiTool), anthropic: R.list(anthropicTool) };
const providerToolSet: R.Rule<ProviderToolSet> = R.shape(providerTools);

/** The value of `projector.agent-tools.get`'s reply. */
export const agentToolsReplyValue: R.Rule<AgentToolsReply> = R.shape({
  version: R.int,
  documents: R.list(mcpDocument),
  // A tool withheld for review (`heldBy: 'held_for_review'`) names its held contract's CID: what a reviewer accepts.
  conflicts: R.list(R.shape({ name: R.anyStr, server: R.anyStr, heldBy: R.anyStr, cid: R.optional(R.anyStr) })),
  lambdas: R.optional(R.list(lambdaDocument)),
  index: R.optional(R.anyStr),
  listing: R.optional(R.anyStr),
  providerTools: R.optional(providerToolSet),
  promoted: R.optional(R.shape({ names: R.list(R.anyStr), ...providerTools })),
});

/** The value of both lambda replies. */
export const lambdaToolReplyValue: R.Rule<LambdaToolReply> = R.shape({
  name: R.anyStr,
  cid: R.optional(R.str),
  version: R.int,
});

/** The value of `projector.tools.search`'s reply. */
export const toolSearchReplyValue: R.Rule<ToolSearchReply> = R.shape({
  families: R.list(
    R.shape({
      family: R.anyStr,
      server: R.anyStr,
      tools: R.list(R.shape({ name: R.anyStr, description: R.anyStr, score: R.num, cid: R.anyStr })),
    }),
  ),
});
