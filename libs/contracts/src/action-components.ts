import * as R from './field-rules.js';

/**
 * The named parts of the action API's tables (`ACTION_MAP`): each is a field rule whose schema is
 * a `$ref` to its component in the OpenAPI document, and `ACTION_COMPONENTS` holds the components.
 */
export const ACTION_COMPONENTS: Record<string, R.JsonSchema> = {};

/** `rule` as the component `name`: the document refers to it by `$ref`; its check is the rule's. */
export function component<T>(name: string, rule: R.Rule<T>): R.Rule<T> {
  ACTION_COMPONENTS[name] = rule.schema ?? {};
  return R.described(rule, { $ref: `#/components/schemas/${name}` });
}

/** How long a name, an id, a cursor or a filter sent to an action may be. */
export const NAME_MAX = 128;
/** A caller's name or id of something (a server, a tool, an approval): non-empty, bounded. */
export const name = R.text(NAME_MAX);
/** A time or a cursor the caller sends back (ISO 8601, an opaque cursor): bounded. */
export const token = R.text(512);
/** An agent, named by its id or its name. */
export const agentRef = R.describe(R.text(NAME_MAX), { description: 'An agent id or name' });
/** How many items a list a caller sends may hold (tool names, grants). */
export const LIST_MAX = 256;

export const role = component('Role', R.oneOf('OWNER', 'WRITER', 'AGENT'));
/** A signer's role in an account (the account's own key is an OWNER). */
export type ActionRole = ReturnType<typeof role>;

const agentDefinitionTable = {
  /** The servers granted (at most 16 once duplicates are dropped). */
  mcpServers: R.list(R.text(64), LIST_MAX),
  /**
   * Who answers a server's questions: form elicitations go to a person unless `forms` is
   * `runtime` (the agent's runtime answers them over the proxy client). URL elicitations always
   * go to a person; sampling always to the runtime.
   */
  inputs: R.absentOrNull(R.closed({ forms: R.optional(R.oneOf('person', 'runtime')) })),
};
export const agentDefinition = component('AgentDefinition', R.closed(agentDefinitionTable));
export type AgentDefinition = R.Shaped<typeof agentDefinitionTable>;

const agentViewTable = {
  id: R.str,
  name: R.str,
  definition: agentDefinition,
  grants: R.shape({ mcpServers: R.list(R.str) }),
  createdAt: R.str,
  updatedAt: R.str,
};
export const agentView = component('AgentView', R.shape(agentViewTable));
export type AgentView = R.Shaped<typeof agentViewTable>;

const oauthClientTable = {
  clientId: R.str,
  clientSecret: R.optional(R.describe(R.str, { writeOnly: true })),
  grant: R.optional(R.oneOf('authorization_code', 'client_credentials')),
  privateKey: R.optional(R.describe(R.str, { writeOnly: true })),
  keyAlg: R.optional(R.oneOf('ES256', 'ES384', 'ES512', 'RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512')),
  scope: R.optional(R.anyStr),
};

/**
 * `config` of SetMcpServer. Header values in `secretHeaders` are stored encrypted.
 * - `secretRefs`: header name → name of an existing account secret.
 * - `auth`: `oauth` runs OAuth 2.1 against the server (a 401 with OAuth metadata yields an
 *   authorization URL); `bearer` sends `token` as `Authorization: Bearer <token>`; `headers`: every
 *   header given is stored encrypted; `none`: no header at all. Absent: `headers` if any header is
 *   given, else `none`.
 * - `token`: with `auth: 'bearer'` only: stored encrypted, never shown again (absent on an update keeps it).
 * - `oauth`: with `auth: 'oauth'` only: a client registered with the authorization server beforehand
 *   (no dynamic registration). `clientSecret` is stored encrypted and never shown again.
 *   `grant: 'client_credentials'` (machine to machine, nobody signs in) takes `clientSecret` or
 *   `privateKey` (an unencrypted PEM PKCS#8 key signing RFC 7523 assertions with `keyAlg`, stored
 *   encrypted) and an optional `scope`.
 * - `pin`: contract pinning, `off`, `review` or `strict`.
 */
const serverConfigTable = {
  url: R.describe(R.str, { format: 'uri' }),
  transport: R.optional(R.oneOf('http', 'sse')),
  headers: R.optional(R.mapOf(R.anyStr)),
  secretHeaders: R.optional(R.describe(R.mapOf(R.anyStr), { writeOnly: true })),
  secretRefs: R.optional(R.mapOf(R.anyStr)),
  auth: R.optional(R.oneOf('oauth', 'bearer', 'headers', 'none')),
  token: R.optional(R.describe(R.anyStr, { writeOnly: true })),
  oauth: R.optional(R.checkedMap(oauthClientTable)),
  pin: R.optional(R.oneOf('off', 'review', 'strict')),
};
/** Checked in place: the registry's validator reads it whole (bounds, grammar) and refuses a field it does not know. */
export const serverConfig = component('McpServerConfigInput', R.checkedMap(serverConfigTable));
export type McpServerConfigInput = R.Shaped<typeof serverConfigTable>;

const agentTokenViewTable = {
  id: R.str,
  agent: R.str,
  name: R.str,
  createdAt: R.str,
  expiresAt: R.orNull(R.str),
  revokedAt: R.orNull(R.str),
  state: R.oneOf('active', 'expired', 'revoked'),
  /**
   * Whether the token's holder (the MCP client's user) may approve the token's own `always_ask`
   * calls, answering the endpoint's elicitation; false: they wait for the owner.
   */
  userMayApprove: R.bool,
};
/** The fields of an agent token as its owner lists it (never the token, never its hash). */
export const agentTokenViewFields = agentTokenViewTable;
export const agentTokenView = component('AgentTokenView', R.shape(agentTokenViewTable));
/** An agent token as its owner lists it (never the token, never its hash). */
export type AgentTokenView = R.Shaped<typeof agentTokenViewTable>;
