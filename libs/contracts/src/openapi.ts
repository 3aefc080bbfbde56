import { ACTION_MAP, ACTION_TYPES, type ActionSpec } from './action-map.js';
import { ACTION_COMPONENTS } from './action-components.js';
import { ERROR_TRAITS, ErrorCodes, type ErrorCode } from './errors.js';
import { tableSchema, type JsonSchema } from './field-rules.js';

/** Each action's request and response schemas (from its tables), its discriminator entry and its `x-mcpx-actions` line. */
function actionSchemas(): {
  schemas: Record<string, JsonSchema>;
  mapping: Record<string, string>;
  actions: Record<string, unknown>;
} {
  const schemas: Record<string, JsonSchema> = { ...ACTION_COMPONENTS };
  const mapping: Record<string, string> = {};
  const actions: Record<string, unknown> = {};
  for (const type of ACTION_TYPES) {
    const spec: ActionSpec = ACTION_MAP[type];
    schemas[`${type}Action`] = {
      description: spec.summary,
      allOf: [tableSchema(spec.request), { type: 'object', properties: { type: { const: type } }, required: ['type'] }],
    };
    schemas[`${type}Response`] = tableSchema(spec.response);
    mapping[type] = `#/components/schemas/${type}Action`;
    actions[type] = {
      summary: spec.summary,
      roles: spec.roles,
      request: { $ref: `#/components/schemas/${type}Action` },
      response: { $ref: `#/components/schemas/${type}Response` },
      errors: spec.errors ?? [],
    };
  }
  return { schemas, mapping, actions };
}

/** The body of every error answer. */
function errorSchema(codes: ErrorCode[]): JsonSchema {
  return {
    type: 'object',
    properties: {
      error: {
        type: 'object',
        properties: { code: { enum: codes }, message: { type: 'string' }, details: { type: 'object' } },
        required: ['code', 'message'],
      },
    },
    required: ['error'],
  };
}

/**
 * The action API as an OpenAPI 3.1 document, generated from the tables of {@link ACTION_MAP} (served by the
 * registry at `GET /v1/openapi.json`). One operation, `POST /v1/actions`, takes a signed
 * envelope whose `action` is one of the actions (discriminated by `type`); each action's request
 * and response are components (`<Type>Action`, `<Type>Response`), and `x-mcpx-actions` lists
 * each action's roles, response and the codes it answers. Error codes, with their HTTP status
 * and retry rule, are in `x-mcpx-errors`.
 */
export function openApiDocument(opts: { version?: string } = {}): Record<string, unknown> {
  const { schemas, mapping, actions } = actionSchemas();
  const codes = Object.values(ErrorCodes) as ErrorCode[];
  schemas.Error = errorSchema(codes);
  schemas.Envelope = {
    type: 'object',
    description: 'A signed action: Ed25519 over the canonical envelope without sig; ts in ms, nonce single-use',
    properties: {
      signer: { type: 'string' },
      account: { type: 'string' },
      ts: { type: 'integer' },
      nonce: { type: 'string' },
      sig: { type: 'string' },
      action: {
        oneOf: ACTION_TYPES.map((t) => ({ $ref: mapping[t] })),
        discriminator: { propertyName: 'type', mapping },
      },
    },
    required: ['signer', 'account', 'ts', 'nonce', 'action', 'sig'],
  };
  const body = (schema: JsonSchema): Record<string, unknown> => ({
    'application/json': { schema },
    'application/cbor': { schema },
  });
  const error = (description: string): Record<string, unknown> => ({
    description,
    content: body({ $ref: '#/components/schemas/Error' }),
  });
  const statuses = [...new Set(codes.map((c) => ERROR_TRAITS[c].status))].sort((a, b) => a - b);
  const errorResponses = Object.fromEntries(
    statuses.map((s) => [String(s), error(`Codes: ${codes.filter((c) => ERROR_TRAITS[c].status === s).join(', ')}`)]),
  );
  return {
    openapi: '3.1.0',
    jsonSchemaDialect: 'https://spec.openapis.org/oas/3.1/dialect/base',
    info: {
      title: 'mcp-connector action API',
      version: opts.version ?? '1',
      description: 'Signed actions of the registry. Generated from the action map of @mcpx/contracts.',
    },
    paths: {
      '/v1/actions': {
        post: {
          operationId: 'act',
          summary: 'Performs one signed action',
          requestBody: { required: true, content: body({ $ref: '#/components/schemas/Envelope' }) },
          responses: {
            '200': {
              description: "The action's response (see x-mcpx-actions for each type's)",
              content: body({ oneOf: ACTION_TYPES.map((t) => ({ $ref: `#/components/schemas/${t}Response` })) }),
            },
            ...errorResponses,
          },
        },
      },
      '/v1/openapi.json': {
        get: {
          operationId: 'openapi',
          summary: 'This document (unauthenticated, cacheable)',
          responses: {
            '200': {
              description: 'The OpenAPI 3.1 document',
              content: { 'application/json': { schema: { type: 'object' } } },
            },
          },
        },
      },
    },
    components: { schemas },
    'x-mcpx-actions': actions,
    'x-mcpx-errors': Object.fromEntries(codes.map((c) => [c, ERROR_TRAITS[c]])),
  };
}
