import type { Counter } from '@opentelemetry/api';
import type { CallToolResult, InputRequiredResult } from '@modelcontextprotocol/server';
import { META_INPUT_REQUEST_ID } from './call-result.js';
import { isInputState } from './input-states.js';

/**
 * A 2026-07-28 client's answers sent with its first request, before any question was asked (no
 * `requestState`): SEP-2322 lets a client send `inputResponses` the server may use, and a server
 * SHOULD ignore what it does not recognize (docs/endpoint.md#answers-before-a-question).
 *
 * This endpoint never hands unsolicited answers to a server. The call goes out without them; when
 * the server's questions all come back to this client (the proxy's `input_required` passed on:
 * forms of a client that declared them, sampling, roots — never a question for the account owner,
 * never an approval) and the client already answered every one of them by key, the call is re-sent
 * at once with exactly those answers and the input request's id, so the proxy checks them as any
 * retry's (each against its question's schema, bound to the token's run, the tool and its
 * arguments, used once). Otherwise the answers are dropped and the client gets the questions as
 * usual: a key no question has, a question for the owner, an answer to a later round are ignored.
 */
export type FirstAnswersOutcome = 'forwarded' | 'ignored';

/** A call of the face: once as the client sent it (without unsolicited answers), once more with the round's answers. */
export type SendCall = (retry?: {
  requestState: string;
  inputResponses: Record<string, unknown>;
}) => Promise<CallToolResult | InputRequiredResult>;

/**
 * Serves a `tools/call` that may carry first-round answers. `state` is the request's
 * `requestState`, `answers` its `inputResponses`, `meta` its `_meta` (a re-send naming an input
 * request there is a retry, not a first round); `counted` gets the outcome when there were answers.
 */
export async function withFirstAnswers(
  send: SendCall,
  answers: Record<string, unknown> | undefined,
  state: unknown,
  meta: Record<string, unknown> | undefined,
  counted?: Counter,
): Promise<CallToolResult | InputRequiredResult> {
  const first = state === undefined && meta?.[META_INPUT_REQUEST_ID] === undefined ? answers : undefined;
  if (first === undefined || Object.keys(first).length === 0) return await send();
  const result = await send();
  const asked = askedOfClient(result);
  if (asked === undefined || !asked.keys.every((k) => Object.hasOwn(first, k))) {
    counted?.add(1, { outcome: 'ignored' satisfies FirstAnswersOutcome });
    return result;
  }
  counted?.add(1, { outcome: 'forwarded' satisfies FirstAnswersOutcome });
  const inputResponses: Record<string, unknown> = {};
  for (const k of asked.keys) inputResponses[k] = first[k];
  return await send({ requestState: asked.requestState, inputResponses });
}

/** The keys and input request id of an `input_required` whose questions are all this client's (the proxy's, passed on). */
function askedOfClient(
  result: CallToolResult | InputRequiredResult,
): { keys: string[]; requestState: string } | undefined {
  const r = result as { resultType?: unknown; requestState?: unknown; inputRequests?: unknown };
  // An approval question's state is sealed by this endpoint, not an input request id: never pre-answered.
  if (r.resultType !== 'input_required' || !isInputState(r.requestState)) return undefined;
  const requests = r.inputRequests;
  if (requests === null || typeof requests !== 'object') return undefined;
  const keys = Object.keys(requests);
  return keys.length === 0 ? undefined : { keys, requestState: r.requestState };
}
