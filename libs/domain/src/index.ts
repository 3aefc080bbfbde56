// The public surface of @mcpx/domain: pure rules for remote MCP tools, no I/O.
export { Permission, TaskSupport, ToolNameStyle, isPermission, isToolNameStyle, isPlainObject } from './types.js';
export type { JsonObject, JsonValue, McpToolDocument, RemoteTool, ToolAnnotations } from './types.js';

export {
  PREFIXED_SLUG_RE,
  SERVER_NAME_RE,
  TOOL_NAME_MAX_LENGTH,
  projectToolNames,
  sanitizeRemoteName,
  serverToolPrefix,
  validateServerName,
} from './names.js';

export {
  SCHEMA_MAX_BYTES,
  SCHEMA_MAX_DEPTH,
  normalizeInputSchema,
  normalizeOutputSchema,
  schemaBoundsFault,
} from './schema.js';

export { READ_VERBS, WRITE_VERBS, inheritPermission } from './permission.js';

export {
  DESCRIPTION_MAX_BYTES,
  TITLE_MAX_BYTES,
  buildToolDocuments,
  normalizeAnnotations,
  taskSupportOf,
} from './document.js';
export type { BuildToolDocumentsOptions } from './document.js';

export { documentCid, encodeCanonical } from './cid.js';
export { jsonSizeExceeds } from './json-measure.js';
export { sha256, sha256Hex } from './sha256.js';

export { DEFAULT_VALIDATION_LIMITS, compileValidator, validateArguments } from './validator.js';
export type { ArgumentValidator, ValidationIssue, ValidationLimits, ValidationResult } from './validator.js';

export {
  ARGUMENT_MAX_CHARS,
  ERROR_TEXT_MAX_BYTES,
  IMAGES_MAX_COUNT,
  IMAGES_MAX_TOTAL_BYTES,
  IMAGE_MAX_BYTES,
  TEXT_LIMIT_BYTES,
  firstStringArgument,
  flattenCallResult,
  isErrorResult,
} from './result.js';
export type { CallResultLike, FlattenCallInput, FlattenLimits, ProxyImage, ProxyResult, TaskHandle } from './result.js';
export {
  CONNECTOR_META_PREFIX,
  CONTENT_MAX_BLOCKS,
  CONTENT_MAX_DEPTH,
  CONTENT_META_MAX_BYTES,
  DEFAULT_CONTENT_LIMITS,
  HOP_META_KEYS,
  OMITTED_META_KEY,
  omittedBlock,
  serverMeta,
  shapeBlock,
  wholeContent,
} from './content.js';
export type { ContentBlock, ContentLimits, OmittedReason, WholeContent } from './content.js';
export { blockFacts, describeFacts, markerLabel, type BlockFacts } from './content-facts.js';

export {
  INDEX_BUDGET_BYTES,
  INDEX_COLLAPSE_ABOVE,
  INDEX_DESCRIPTION_MAX_CHARS,
  renderToolIndex,
  renderToolListing,
  summarizeDescription,
} from './index-render.js';
export type { IndexedTool, RenderToolIndexOptions } from './index-render.js';

export { promotableTools, providerDescription, toAnthropicTool, toOpenAiTool } from './provider.js';
export type { AnthropicTool, OpenAiTool, OwnToolDocument } from './provider.js';

export { LAMBDA_NAME_RE, LambdaDocumentError, buildLambdaDocument, providerTools } from './lambda.js';
export type { AgentToolDocument, LambdaToolDocument } from './lambda.js';

export {
  BUILTIN_SERVERS,
  builtinEndpoint,
  builtinServerId,
  builtinsOfVendor,
  findBuiltin,
  findVendor,
  isBuiltinServerId,
  parseBuiltinServerId,
  vendorTokenEndpoint,
} from './builtin-catalog.js';
export type { BuiltinServer, BuiltinVendor } from './builtin-catalog.js';

export {
  contractCid,
  diffContracts,
  documentContractCid,
  diffSchemas,
  diffText,
  inputCompatible,
  toolContract,
} from './contract-diff.js';
export type {
  AnnotationChange,
  ContractDiff,
  SchemaAspect,
  SchemaChange,
  TextChange,
  ToolContract,
} from './contract-diff.js';
export { ContractWarningCodes, LONG_DESCRIPTION_CHARS, contractWarnings, nameSkeleton } from './contract-warnings.js';
export type { ContractWarning, ContractWarningCode, WarningContext } from './contract-warnings.js';
export { carriesProtoKey } from './proto-key.js';
export { nestsDeeper } from './nesting.js';
export {
  LEGACY_UI_RESOURCE_URI_KEY,
  TOOL_META_MAX_BYTES,
  TOOL_META_MAX_DEPTH,
  UI_META_KEY,
  toolAppUri,
  toolMetaOf,
  withAppUri,
} from './tool-meta.js';
export { codePointLabel, displayText } from './display-text.js';
