import type { Span } from '@opentelemetry/api';
import { ErrorCodes, INPUT_METHODS, WireError, type RelayRequest } from '@mcpx/contracts';
import type { RelayOptions } from '@mcpx/mcp-client';
import { argumentsHash } from './approval-gate.js';
import { capabilitiesOf } from './declared-capabilities.js';
import { inputRoundOf, type InputAsker, type InputGate, type InputTarget } from './input-requests.js';

/** Sends the relayed request's method with `params` (and the options of its input rounds) on the run's connection. */
export type RelaySend = (
  params: Record<string, unknown>,
  opts: Pick<RelayOptions, 'allowInputRequired' | 'onlyCapabilities'>,
) => Promise<Record<string, unknown>>;

/** Rounds a server may answer with only a `requestState` (no question) before the relay gives up. */
const STATE_ONLY_HOPS = 8;

function isInputRequired(result: Record<string, unknown>): boolean {
  return result.resultType === 'input_required';
}

/**
 * Who asks and what, for the input request of a relayed request: bound to its run, to the method,
 * server and prompt name (or URI) in place of a tool's name (`<method> <server> <name>`: the
 * spaces keep it from ever being a tool's projected name), and to the prompt's arguments.
 */
export function relayAsker(req: RelayRequest): { asker: InputAsker; target: InputTarget; argsHash: string } {
  const what = String(req.method === 'prompts/get' ? req.params.name : req.params.uri);
  const asker: InputAsker = {
    account: req.account,
    agent: req.agent,
    run: req.run,
    tool: `${req.method} ${req.server} ${what}`,
    ...(req.answers !== undefined ? { answers: req.answers } : {}),
    ...(req.inputRequestId !== undefined ? { inputRequestId: req.inputRequestId } : {}),
    ...(req.inputResponses !== undefined ? { inputResponses: req.inputResponses } : {}),
  };
  const args = (req.params.arguments ?? {}) as Record<string, unknown>;
  return { asker, target: { name: what, server: req.server, remoteName: what }, argsHash: argumentsHash(args) };
}

/**
 * A relayed `prompts/get` or `resources/read` with its input rounds (2026-07-28 `input_required`,
 * SEP-2322), as a tool call has them: the server is told exactly what the caller (the endpoint's
 * client) declared it answers; an `input_required` is recorded as an input request (the server's
 * `requestState` sealed, bound to the run, the prompt or URI and its arguments) and the relay
 * fails with `input_required` carrying the questions, all of them for the caller; the request
 * re-sent with `inputRequestId` and the answers goes back to the server with the unsealed state,
 * once. A question the caller did not declare it answers is refused (`input_refused`): a relayed
 * request has no person to turn to. Other methods are sent as they are.
 */
export async function relayWithInputs(
  req: RelayRequest,
  send: RelaySend,
  inputs: InputGate | undefined,
  span: Span,
): Promise<Record<string, unknown>> {
  if (!INPUT_METHODS.has(req.method)) return await send(req.params, {});
  const { asker, target, argsHash } = relayAsker(req);
  const opts = { allowInputRequired: true, onlyCapabilities: capabilitiesOf(req.answers) };
  let params = req.params;
  let round = 1;
  if (req.inputRequestId !== undefined) {
    if (inputs === undefined)
      throw new WireError(ErrorCodes.inputRefused, 'input requests are not available here', {
        reason: 'unknown',
        server: req.server,
      });
    const resumption = await inputs.resume(asker, target, argsHash);
    span.setAttribute('mcpx.input_round', resumption.round);
    params = {
      ...req.params,
      inputResponses: resumption.inputResponses,
      ...(resumption.requestState !== undefined ? { requestState: resumption.requestState } : {}),
    };
    round = resumption.round + 1;
  }
  let result = await send(params, opts);
  for (let hops = 0; isInputRequired(result); hops++) {
    const asked = inputRoundOf(result);
    const questions = Object.keys(asked.inputRequests).length;
    if (inputs === undefined) {
      throw new WireError(
        ErrorCodes.inputRefused,
        `${target.name} asks for input before it can be given, and input requests are not available here`,
        { reason: 'unavailable', server: req.server },
      );
    }
    if (questions === 0 && asked.requestState !== undefined && hops < STATE_ONLY_HOPS) {
      result = await send({ ...req.params, requestState: asked.requestState }, opts);
      continue;
    }
    if (questions === 0)
      throw new WireError(
        ErrorCodes.serverError,
        `the ${req.server} MCP server answered ${req.method} with input_required and no question`,
        { server: req.server },
      );
    const items = inputs.classify(asker, target, asked.inputRequests, false);
    const unanswerable = items.find((i) => i.answerBy === 'person');
    if (unanswerable !== undefined) {
      throw new WireError(
        ErrorCodes.inputRefused,
        `${target.name}: the server asks a ${unanswerable.kind} question that the client did not declare it answers, and a relayed request has no person to ask`,
        {
          reason: 'unanswerable',
          server: req.server,
          key: unanswerable.key,
        },
      );
    }
    span.addEvent('input requested', { 'mcpx.input_questions': items.length });
    await inputs.stop(asker, target, items, {
      argsHash,
      round,
      approved: false,
      era: 'modern',
      ...(asked.requestState !== undefined ? { requestState: asked.requestState } : {}),
    });
  }
  return result;
}
