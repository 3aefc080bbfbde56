import { WireError, type InputRequestView } from '@mcpx/contracts';
import { inputRequiredOf, type InputRequired } from '@mcpx/proxy-client';
import { startInputMcpServer, type InputMcpServer } from '../servers/input-mcp-server.js';
import { ProxySystem, type ProxySystemOptions } from '../support/proxy-system.js';

/** The six tools of the input server, as an agent granted `ops` sees them. */
export const INPUT_TOOLS = 6;

/**
 * A ProxySystem and a real SDK v2 server whose tools ask questions mid-call, set as server `ops` and
 * granted to `agent` (default `ops-agent`), with `definition.inputs` when given. Both are stopped if
 * the setup fails.
 */
export async function startInputSystem(
  opts: ProxySystemOptions & { agent?: string; era?: 'modern' | 'dual'; inputs?: { forms: 'person' | 'runtime' } } = {},
): Promise<{ system: ProxySystem; upstream: InputMcpServer; agentId: string }> {
  const { agent = 'ops-agent', era = 'modern', inputs, ...systemOpts } = opts;
  const [system, upstream] = await Promise.all([ProxySystem.start(systemOpts), startInputMcpServer({ era })]);
  try {
    await system.setServer('ops', upstream.url);
    const agentId = await system.createAgent(agent, ['ops'], INPUT_TOOLS);
    if (inputs !== undefined)
      await system.api.act('UpdateAgent', { agent: agentId, definition: { mcpServers: ['ops'], inputs } });
    return { system, upstream, agentId };
  } catch (err) {
    await system.stop();
    await upstream.close();
    throw err;
  }
}

/** The `input_required` details of a call that stopped for input (fails the test otherwise). */
export async function askedInput(p: Promise<unknown>): Promise<InputRequired & { error: WireError }> {
  try {
    await p;
  } catch (err) {
    const d = inputRequiredOf(err);
    if (d === undefined)
      throw err instanceof Error
        ? new Error(`expected input_required, got ${(err as WireError).code}: ${err.message}`)
        : err;
    return { ...d, error: err as WireError };
  }
  throw new Error('the call finished, input_required was expected');
}

/** The typed error of a promise (fails the test if it resolves). */
export async function failure(p: Promise<unknown>): Promise<WireError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof WireError) return err;
    throw err;
  }
  throw new Error('succeeded, an error was expected');
}

/** The account's pending input requests. */
export async function pendingInputs(system: ProxySystem): Promise<InputRequestView[]> {
  return (await system.api.act<{ inputRequests: InputRequestView[] }>('ListInputRequests', {})).inputRequests;
}

/** The form the input servers' `deploy` tool asks a person to fill in, as a question lists it. */
export const DEPLOY_SCHEMA = {
  type: 'object',
  properties: { confirm: { type: 'boolean', title: 'Confirm deployment' } },
  required: ['confirm'],
};

/** A person accepts a pending question with `content` as the answer. */
export async function acceptInput(
  system: Pick<ProxySystem, 'api'>,
  id: string,
  content: Record<string, unknown>,
): Promise<void> {
  await system.api.act('AnswerInputRequest', { id, action: 'accept', content });
}

/**
 * `InvokeTool` that stops for input (fails the test otherwise), its question accepted with
 * `content`, then the same invocation re-sent in the run it opened with the question's id.
 * Answers that run and the re-sent invocation's text.
 */
export async function invokeAnswered(
  system: Pick<ProxySystem, 'api'>,
  call: { agent: string; tool: string; arguments: Record<string, unknown> },
  content: Record<string, unknown>,
): Promise<{ run: string; text: string }> {
  const stopped = await failure(system.api.act('InvokeTool', call));
  if (stopped.code !== 'input_required') throw new Error(`expected input_required, got ${stopped.code}`);
  const { inputRequestId, run } = stopped.details as { inputRequestId: string; run: string };
  await acceptInput(system, inputRequestId, content);
  const ran = await system.api.act<{ result: { text: string } }>('InvokeTool', { ...call, run, inputRequestId });
  return { run, text: ran.result.text };
}

/** The text of a call's result. */
export function textOf(result: { text?: string }): string {
  return result.text ?? '';
}

/** The text of `tool`'s call in run `run` re-sent with its answered question `inputRequestId`. */
export async function resumedText(
  system: Pick<ProxySystem, 'call'>,
  agent: string,
  run: string,
  tool: string,
  args: Record<string, unknown>,
  inputRequestId: string,
): Promise<string> {
  return textOf((await system.call(agent, run, tool, args, { inputRequestId })).result);
}
