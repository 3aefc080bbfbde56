import { anyMap, anyStr, bool, oneOf, optional, payloadDecoder, shape, str, type Rule } from './field-rules.js';

/**
 * The messages of the agent MCP endpoint (services/endpoint) on the bus: those between its
 * instances (a 2025 client's answer forwarded to the instance that holds the call, what a 2025
 * client declared) and its request to the registry to audit a decision a token holder took.
 * Each decoder is a table of field rules (`field-rules.ts`): it throws only an `invalid_input`
 * WireError naming the payload or its first malformed field, and returns only what it checked.
 */

/**
 * `mcp.endpoint.<instance>.answer`'s request: a 2025 client's answer to a question the instance
 * `<instance>` asked during a call it holds. `token` is the answering token's id (never the
 * token), `id` the question's JSON-RPC id, `result` the client's result (absent: no result).
 */
export interface ForwardedAnswer {
  token: string;
  id: string;
  result?: Record<string, unknown>;
}

/** The value of `mcp.endpoint.<instance>.answer`'s reply: whether the holder took the answer. */
export interface ForwardedAnswerReply {
  taken: boolean;
}

/**
 * `mcp.endpoint.clients.declared`: what a 2025 client of token `token` (its id) declared in its
 * `initialize`, heard by the instance `instance`.
 */
export interface ClientDeclared {
  instance: string;
  token: string;
  elicitation: boolean;
  sampling: boolean;
  /** Whether it opens URL questions (`elicitation.url`); absent from an older instance: no. */
  elicitationUrl?: boolean;
}

/**
 * `registry.approvals.token-decided`'s request: "approval `approvalId` of `account` was decided by
 * a token holder through the endpoint; audit it". Only ids: the registry reads the decision from
 * the approval store itself, so the endpoint cannot word an entry.
 */
export interface TokenDecisionAudit {
  account: string;
  approvalId: string;
}

/**
 * The value of `registry.approvals.token-decided`'s reply: `recorded` (this request wrote the
 * entry) or `already` (an earlier one did: a retry never writes twice).
 */
export interface TokenDecisionAuditReply {
  audit: 'recorded' | 'already';
}

/**
 * How the approval store and the audit log name a token holder who decided an approval through
 * the endpoint: `agent-token:<token id>` (never the token).
 */
export const TOKEN_DECIDER_PREFIX = 'agent-token:';

/** The decider of a token holder's decision (`agent-token:<token id>`). */
export function tokenDecider(tokenId: string): string {
  return `${TOKEN_DECIDER_PREFIX}${tokenId}`;
}

/** Whether a decider names a token holder ({@link tokenDecider}), not an owner. */
export function isTokenDecider(decidedBy: string | undefined): boolean {
  return (
    decidedBy !== undefined &&
    decidedBy.length > TOKEN_DECIDER_PREFIX.length &&
    decidedBy.startsWith(TOKEN_DECIDER_PREFIX)
  );
}

/** `mcp.endpoint.<instance>.answer`'s request. */
export const decodeForwardedAnswer: (bytes: Uint8Array) => ForwardedAnswer = payloadDecoder('answer', {
  token: anyStr,
  id: anyStr,
  result: optional(anyMap),
});

/** The value of `mcp.endpoint.<instance>.answer`'s reply (`request`'s `decodeValue`). */
export const forwardedAnswerReplyValue: Rule<ForwardedAnswerReply> = shape({ taken: bool });

/** `mcp.endpoint.clients.declared`. */
export const decodeClientDeclared: (bytes: Uint8Array) => ClientDeclared = payloadDecoder('declared', {
  instance: anyStr,
  token: anyStr,
  elicitation: bool,
  sampling: bool,
  elicitationUrl: optional(bool),
});

/** `registry.approvals.token-decided`'s request. */
export const decodeTokenDecisionAudit: (bytes: Uint8Array) => TokenDecisionAudit = payloadDecoder(
  'tokenDecisionAudit',
  { account: str, approvalId: str },
);

/** The value of `registry.approvals.token-decided`'s reply (`request`'s `decodeValue`). */
export const tokenDecisionAuditReplyValue: Rule<TokenDecisionAuditReply> = shape({
  audit: oneOf('recorded', 'already'),
});
