import { ENDPOINT_RUN_PREFIX } from '@mcpx/contracts';
import type { CallToolOptions } from '@mcpx/mcp-client';
import type { InputAsker } from './input-requests.js';

/** Client capabilities, as a request's `_meta` declares them to a 2026-07-28 server. */
export type DeclaredCapabilities = NonNullable<CallToolOptions['onlyCapabilities']>;

/** The capabilities of what a caller says it answers itself: forms, sampling, roots. */
export function capabilitiesOf(answers: InputAsker['answers']): DeclaredCapabilities {
  return {
    ...(answers?.forms === true ? { elicitation: { form: {} } } : {}),
    ...(answers?.sampling === true ? { sampling: {} } : {}),
    ...(answers?.roots === true ? { roots: {} } : {}),
  };
}

/**
 * What a call tells its server the client can answer, when that is not the connection's own
 * declaration: the endpoint's client that declared a way to answer (forms, sampling, roots) is
 * declared as it is, so the server asks only what that client can answer (SEP-2322: a server
 * asks only for what the request's capabilities cover) and none of its questions goes to the
 * owner. Undefined for a client that declared none (the connector's own declaration stands:
 * a person answers forms and URL questions, as before) and for every other runtime.
 */
export function declaredFor(req: InputAsker): DeclaredCapabilities | undefined {
  if (!req.run.startsWith(ENDPOINT_RUN_PREFIX) || req.answers === undefined) return undefined;
  const caps = capabilitiesOf(req.answers);
  return Object.keys(caps).length === 0 ? undefined : caps;
}
