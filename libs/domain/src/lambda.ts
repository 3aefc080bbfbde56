import { isPlainObject } from './types.js';
import type { JsonObject, McpToolDocument } from './types.js';
import { normalizeInputSchema } from './schema.js';
import { boundText } from './utf8.js';
import { DESCRIPTION_MAX_BYTES } from './document.js';
import { TOOL_NAME_MAX_LENGTH } from './names.js';
import { toAnthropicTool, toOpenAiTool, type AnthropicTool, type OpenAiTool } from './provider.js';

/** A lambda's name: what providers accept as a tool name. */
export const LAMBDA_NAME_RE = /^[A-Za-z0-9_-]{1,64}$/;

/** An authored tool of one agent. It keeps a name it holds against any mcp tool that arrives later. */
export interface LambdaToolDocument {
  kind: 'lambda';
  name: string;
  description: string;
  inputSchema: JsonObject;
  enabled: boolean;
}

/** Either kind of document an agent's ~/tools/ holds that this service knows about. */
export type AgentToolDocument = McpToolDocument | LambdaToolDocument;

/** Why a lambda document was refused: the field and a human message. */
export class LambdaDocumentError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The stored form of a lambda saved as `name` with `input` ({description?, inputSchema?, enabled?}).
 * The schema is normalised like a remote one. Throws LambdaDocumentError on a bad name or shape;
 * a `kind` other than `lambda` is refused here too (mcp documents come only from their server).
 */
export function buildLambdaDocument(name: unknown, input: unknown): LambdaToolDocument {
  if (typeof name !== 'string' || !LAMBDA_NAME_RE.test(name)) {
    throw new LambdaDocumentError(
      'name',
      `must be 1 to ${TOOL_NAME_MAX_LENGTH} characters of A-Z, a-z, 0-9, "_" and "-"`,
    );
  }
  if (!isPlainObject(input)) throw new LambdaDocumentError('document', 'must be an object');
  if (input.kind !== undefined && input.kind !== 'lambda')
    throw new LambdaDocumentError('document.kind', 'must be "lambda"');
  if (input.description !== undefined && typeof input.description !== 'string')
    throw new LambdaDocumentError('document.description', 'must be a string');
  if (input.enabled !== undefined && typeof input.enabled !== 'boolean')
    throw new LambdaDocumentError('document.enabled', 'must be a boolean');
  return {
    kind: 'lambda',
    name,
    description: boundText(
      typeof input.description === 'string' ? input.description.trim() : '',
      DESCRIPTION_MAX_BYTES,
    ),
    inputSchema: normalizeInputSchema(input.inputSchema),
    enabled: input.enabled !== false,
  };
}

/** The provider tool formats of documents, in the order given (a lambda names itself when it has no description). */
export function providerTools(docs: readonly AgentToolDocument[]): {
  openai: OpenAiTool[];
  anthropic: AnthropicTool[];
} {
  const asProvider = docs.map((d) =>
    d.kind === 'mcp'
      ? d
      : {
          name: d.name,
          description: d.description === '' ? `${d.name} (lambda)` : d.description,
          inputSchema: d.inputSchema,
          server: '',
          remoteName: d.name,
        },
  );
  return { openai: asProvider.map(toOpenAiTool), anthropic: asProvider.map(toAnthropicTool) };
}
