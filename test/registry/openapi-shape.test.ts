import { readFileSync } from 'node:fs';
import { openApiDocument } from '@mcpx/contracts';
import { describe, expect, it } from 'vitest';

type Node = Record<string, unknown>;

/** Keywords a table adds to what was published: bounds and notes its rules check, never a change of shape. */
const REFINEMENTS = new Set([
  'minLength',
  'maxLength',
  'maxItems',
  'minimum',
  'maximum',
  'pattern',
  'description',
  'additionalProperties',
]);

/**
 * The differences between two documents, one line each: a keyword gone (`-`), added (`+`, not
 * counting refinements) or changed (`~`); lists of strings (`required`, `enum`) compare as sets.
 */
function differences(a: unknown, b: unknown, path = '#'): string[] {
  const isNode = (x: unknown): x is Node => x !== null && typeof x === 'object' && !Array.isArray(x);
  if (isNode(a) && isNode(b)) {
    const out: string[] = [];
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
      if (!(k in b)) out.push(`- ${path}.${k}`);
      else if (!(k in a)) {
        if (!REFINEMENTS.has(k)) out.push(`+ ${path}.${k}`);
      } else out.push(...differences(a[k], b[k], `${path}.${k}`));
    }
    return out;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.every((x) => typeof x === 'string') && b.every((x) => typeof x === 'string'))
      return [...a].sort().join() === [...b].sort().join() ? [] : [`~ ${path}`];
    if (a.length !== b.length) return [`~ ${path}`];
    return a.flatMap((x, i) => differences(x, b[i], `${path}[${i}]`));
  }
  return JSON.stringify(a) === JSON.stringify(b) ? [] : [`~ ${path}`];
}

const S = '#.components.schemas';

/**
 * The document generated from the action tables against the one published before them (written
 * by hand as JSON Schemas, `openapi-published.json`): the same operations, components, actions,
 * fields and codes. What differs is listed here, each where the hand-written schema disagreed
 * with what the registry takes or answers, or said less.
 */
const EXPECTED = [
  // GetTaskResult came after the published document: one more action in the envelope's and the answer's lists.
  `~ ${S}.Envelope.properties.action.oneOf`,
  '~ #.paths./v1/actions.post.responses.200.content.application/cbor.schema.oneOf',
  '~ #.paths./v1/actions.post.responses.200.content.application/json.schema.oneOf',
  `+ ${S}.Envelope.properties.action.discriminator.mapping.GetTaskResult`,
  `+ ${S}.GetTaskResultAction`,
  `+ ${S}.GetTaskResultResponse`,
  '+ #.x-mcpx-actions.GetTaskResult',
  // `inputRequestId` stands for `id` when `id` is absent: neither is required alone.
  `~ ${S}.AnswerInputRequestAction.allOf[0].required`,
  // An agent's definition may be left out (it grants nothing): the registry always took that.
  `~ ${S}.CreateAgentAction.allOf[0].required`,
  `~ ${S}.UpdateAgentAction.allOf[0].required`,
  // Both are read as numbers (a fraction of a day, of a millisecond), not only integers.
  `~ ${S}.CreateAgentTokenAction.allOf[0].properties.expiresInDays.type`,
  `~ ${S}.InvokeToolAction.allOf[0].properties.timeoutMs.type`,
  // The token view's fields and `token`, as one object instead of an allOf of the two.
  `- ${S}.CreateAgentTokenResponse.allOf`,
  `+ ${S}.CreateAgentTokenResponse.type`,
  `+ ${S}.CreateAgentTokenResponse.properties`,
  `+ ${S}.CreateAgentTokenResponse.required`,
  // A sign-in request was `{type: object}`; its fields are described now.
  `+ ${S}.ListSignInRequestsResponse.properties.signIns.items.properties`,
  `+ ${S}.ListSignInRequestsResponse.properties.signIns.items.required`,
  // Strings that are one of a few values say which.
  `- ${S}.ListToolChangesAction.allOf[0].properties.status.type`,
  `+ ${S}.ListToolChangesAction.allOf[0].properties.status.enum`,
  `- ${S}.McpServerConfigInput.properties.oauth.properties.keyAlg.type`,
  `+ ${S}.McpServerConfigInput.properties.oauth.properties.keyAlg.enum`,
  `- ${S}.McpServerConfigInput.properties.transport.type`,
  `+ ${S}.McpServerConfigInput.properties.transport.enum`,
  `- ${S}.RedactedMcpServer.properties.transport.type`,
  `+ ${S}.RedactedMcpServer.properties.transport.enum`,
  // A redacted server always carries its transport, header names and whether it has secrets.
  `~ ${S}.RedactedMcpServer.required`,
  // The views answered were `{type: object}`; each is now a component described by its table, field by field.
  ...views([
    ['ApprovalView', 'ListApprovalsResponse.properties.approvals.items'],
    ['ApprovalView', 'ApproveToolCallResponse.properties.approval'],
    ['ApprovalView', 'DenyToolCallResponse.properties.approval'],
    ['InputRequestView', 'ListInputRequestsResponse.properties.inputRequests.items'],
    ['InputRequestView', 'AnswerInputRequestResponse.properties.inputRequest'],
    ['ToolChangeView', 'ListToolChangesResponse.properties.changes.items'],
    ['AuditEventView', 'ListAuditEventsResponse.properties.events.items'],
  ]),
  // A redacted server's tools and status are described too, and its OAuth client (always answered, never published).
  `+ ${S}.RedactedMcpServer.properties.oauthClient`,
  `+ ${S}.RedactedMcpServer.properties.status.properties`,
  `+ ${S}.RedactedMcpServer.properties.status.required`,
  `+ ${S}.RedactedMcpServer.properties.tools.items.properties`,
  `+ ${S}.RedactedMcpServer.properties.tools.items.required`,
];

/** Each view's component added, and each place that said `{type: object}` for it now a `$ref` to it. */
function views(uses: Array<[view: string, at: string]>): string[] {
  const added = new Set(uses.map(([view]) => `+ ${S}.${view}`));
  return [...added, ...uses.flatMap(([, at]) => [`- ${S}.${at}.type`, `+ ${S}.${at}.$ref`])];
}

describe('the OpenAPI document generated from the action tables', () => {
  const published = JSON.parse(readFileSync(new URL('openapi-published.json', import.meta.url), 'utf8')) as unknown;

  it('keeps the published shape: every difference is one of the listed ones', () => {
    const generated = JSON.parse(JSON.stringify(openApiDocument())) as unknown;
    expect(differences(published, generated).sort()).toEqual([...EXPECTED].sort());
  });

  it('the comparison finds a field gone, a field added and a type changed', () => {
    const generated = JSON.parse(JSON.stringify(openApiDocument()));
    const request = generated.components.schemas.SetMcpServerAction.allOf[0];
    delete request.properties.name;
    request.properties.extra = { type: 'string' };
    generated.components.schemas.EndRunResponse.properties.run.type = 'integer';
    expect(differences(published, generated)).toEqual(
      expect.arrayContaining([
        `- ${S}.SetMcpServerAction.allOf[0].properties.name`,
        `+ ${S}.SetMcpServerAction.allOf[0].properties.extra`,
        `~ ${S}.EndRunResponse.properties.run.type`,
      ]),
    );
  });
});
