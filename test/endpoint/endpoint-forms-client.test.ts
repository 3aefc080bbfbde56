import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { startInputMcpServer, type InputMcpServer } from '../servers/input-mcp-server.js';
import { INPUT_TOOLS, pendingInputs } from '../inputs/input-system.js';
import { errorOf, startEndpointSystem, type EndpointSystem } from './endpoint-harness.js';
import { modernCall } from './raw-mcp.js';

type Result = { content?: unknown; isError?: boolean; _meta?: Record<string, unknown> };
const textOf = (result: Result): string => (result.content as Array<{ text?: string }> | undefined)?.[0]?.text ?? '';
const FIELDS: Record<string, unknown> = { confirm: true, name: 'from-client', region: 'eu-west-1', tags: [] };
const fill = (params: unknown): Record<string, unknown> =>
  Object.fromEntries(
    Object.keys(
      (params as { requestedSchema?: { properties?: Record<string, unknown> } }).requestedSchema?.properties ?? {},
    ).map((f) => [f, FIELDS[f] ?? 'x']),
  );

/**
 * A server's form goes to the endpoint client that declared form elicitation, whatever the agent's
 * `inputs.forms` says (that setting is about an unattended NATS runtime; an endpoint client that
 * declares elicitation has a person behind it): as its own `input_required` (2026-07-28, the
 * requestState the proxy's sealed input request, bound to the token's run) or as
 * `elicitation/create` on the call's stream (2025-11-25). A client that declared no forms (none,
 * or URL only) leaves the form to the account owner, as before. Attack: another token presenting
 * the question's requestState answers nothing and the server's tool does not run.
 */
describe('forms to the endpoint client that declared elicitation', () => {
  let sys: EndpointSystem;
  let upstream: InputMcpServer;
  const v2: Client[] = [];
  const v1: V1Client[] = [];

  /** An SDK v2 client (2026-07-28 when both sides speak it) declaring `elicitation` as given. */
  const connectV2 = async (
    token: string,
    elicitation: { form?: Record<string, never>; url?: Record<string, never> } | undefined,
    asked: string[] = [],
  ): Promise<Client> => {
    const client = new Client(
      { name: 'forms-v2', version: '1.0.0' },
      { versionNegotiation: { mode: 'auto' }, capabilities: elicitation === undefined ? {} : { elicitation } },
    );
    if (elicitation !== undefined) {
      client.setRequestHandler('elicitation/create', (req) => {
        asked.push(String((req.params as { message?: unknown }).message));
        return Promise.resolve({
          action: 'accept' as const,
          content: fill(req.params) as Record<string, string | boolean | string[]>,
        });
      });
    }
    await client.connect(
      new StreamableHTTPClientTransport(new URL(sys.urlOf('plain')), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    v2.push(client);
    return client;
  };

  beforeAll(async () => {
    [sys, upstream] = await Promise.all([startEndpointSystem(), startInputMcpServer()]);
    await sys.system.setServer('ops', upstream.url);
    // The agent's definition keeps the default: its runtime answers no forms.
    await sys.system.createAgent('plain', ['ops'], INPUT_TOOLS);
  }, 120_000);

  afterAll(async () => {
    for (const c of v2) await c.close().catch(() => undefined);
    for (const c of v1) await c.close().catch(() => undefined);
    await sys?.stop();
    await upstream?.close();
  });

  it('an SDK v2 client that declared form elicitation answers the form itself, over two rounds, and nothing waits for the owner', async () => {
    const { token } = await sys.token('plain');
    const asked: string[] = [];
    const client = await connectV2(token, { form: {} }, asked);
    const deployed = (await client.callTool({ name: 'ops__deploy', arguments: { env: 'eu' } })) as Result;
    expect(deployed.isError, JSON.stringify(deployed)).toBeFalsy();
    expect(textOf(deployed)).toBe('Deployed to eu');
    // Two rounds, the second with the server's own requestState (sealed in the proxy between them).
    const provisioned = (await client.callTool({ name: 'ops__provision', arguments: {} })) as Result;
    expect(textOf(provisioned), JSON.stringify(provisioned)).toBe('Provisioned from-client in eu-west-1');
    expect(asked).toEqual(['Deploy to eu?', 'Database name?', 'Which region?', 'Any tags?']);
    expect(await pendingInputs(sys.system)).toEqual([]);
  });

  it('the 2025 `elicitation: {}` form counts too: an SDK v1 client is asked with elicitation/create on its call', async () => {
    const { token } = await sys.token('plain');
    const asked: string[] = [];
    const client = new V1Client({ name: 'forms-v1', version: '1.0.0' }, { capabilities: { elicitation: {} } });
    client.setRequestHandler(ElicitRequestSchema, (req) => {
      asked.push(String(req.params.message));
      return Promise.resolve({ action: 'accept' as const, content: { confirm: true } });
    });
    await client.connect(
      new V1Transport(new URL(sys.urlOf('plain')), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
    );
    v1.push(client);
    const done = await client.callTool({ name: 'ops__deploy', arguments: { env: 'us' } });
    expect(textOf(done as Result), JSON.stringify(done)).toBe('Deployed to us');
    expect(asked).toEqual(['Deploy to us?']);
    expect(await pendingInputs(sys.system)).toEqual([]);
  });

  it('a client that declared no forms (none, or URL questions only) leaves the form to the owner: a tool result naming the input request', async () => {
    const { token } = await sys.token('plain');
    for (const elicitation of [undefined, { url: {} }]) {
      const client = await connectV2(token, elicitation);
      const stopped = (await client.callTool({ name: 'ops__deploy', arguments: { env: 'prod' } })) as Result;
      expect(stopped.isError).toBe(true);
      const err = errorOf(stopped);
      expect(err).toMatchObject({ code: 'input_required', details: { forPerson: true } });
      const id = err.details.inputRequestId as string;
      expect((await pendingInputs(sys.system)).find((r) => r.id === id)?.requests[0]).toMatchObject({
        kind: 'form',
        answerBy: 'person',
      });
      await sys.system.api.act('AnswerInputRequest', { id, action: 'cancel' });
    }
  });

  it("attack: another token presenting a client's form's requestState answers nothing, and the tool does not run", async () => {
    const mine = (await sys.token('plain')).token;
    const other = (await sys.token('plain')).token;
    const caps = { elicitation: { form: {} } };
    const url = sys.urlOf('plain');
    const asked = await modernCall(url, mine, 'ops__deploy', { env: 'prod' }, caps);
    expect(asked.result?.resultType, JSON.stringify(asked.message)).toBe('input_required');
    const requestState = asked.result?.requestState as string;
    expect(requestState).toMatch(/^inp_/);
    expect(Object.keys(asked.result?.inputRequests as object)).toEqual(['confirm']);
    const answer = { requestState, inputResponses: { confirm: { action: 'accept', content: { confirm: true } } } };
    const before = upstream.stats.responsesSeen.length;
    // Refused as a server refuses a state that fails its check: a JSON-RPC error naming requestState.
    const stolen = await modernCall(url, other, 'ops__deploy', { env: 'prod' }, caps, answer);
    expect(stolen.message?.error).toMatchObject({
      code: -32602,
      data: { code: 'input_refused', details: { reason: 'mismatch', field: 'requestState' } },
    });
    expect(upstream.stats.responsesSeen.slice(before).filter((r) => r !== undefined)).toEqual([]);
    // The token's own answer is taken, once.
    const done = await modernCall(url, mine, 'ops__deploy', { env: 'prod' }, caps, answer);
    expect(textOf(done.result as Result)).toBe('Deployed to prod');
    const again = await modernCall(url, mine, 'ops__deploy', { env: 'prod' }, caps, answer);
    expect(again.message?.error).toMatchObject({
      code: -32602,
      data: { code: 'input_refused', details: { reason: 'used', field: 'requestState' } },
    });
  });

  it('answers sent before any question reach the server only as answers to its questions of this client; extra keys are dropped', async () => {
    const { token } = await sys.token('plain');
    const url = sys.urlOf('plain');
    const caps = { elicitation: { form: {} } };
    const confirm = { action: 'accept', content: { confirm: true } };
    const before = upstream.stats.responsesSeen.length;
    const inputResponses = { confirm, unknown_extra_key: { action: 'accept', content: { foo: 'bar' } } };
    const done = await modernCall(url, token, 'ops__deploy', { env: 'eu' }, caps, { inputResponses });
    expect(textOf(done.result as Result), JSON.stringify(done.message)).toBe('Deployed to eu');
    // The server was asked first without them, then answered its own question only.
    expect(upstream.stats.responsesSeen.slice(before)).toEqual([undefined, { confirm }]);
    // Answers that do not answer what the server asks are ignored: the question comes back as usual.
    const partial = await modernCall(url, token, 'ops__deploy', { env: 'eu' }, caps, {
      inputResponses: { wrong_key: confirm },
    });
    expect(partial.result?.resultType, JSON.stringify(partial.message)).toBe('input_required');
    expect(Object.keys(partial.result?.inputRequests as object)).toEqual(['confirm']);
    expect(await pendingInputs(sys.system)).toEqual([]);
  });

  it("attack: a client that declared no forms cannot pre-answer the owner's form: the server never sees the answer, the owner decides", async () => {
    const { token } = await sys.token('plain');
    const url = sys.urlOf('plain');
    const before = upstream.stats.responsesSeen.length;
    const forged = { confirm: { action: 'accept', content: { confirm: true } } };
    const stopped = await modernCall(url, token, 'ops__deploy', { env: 'prod' }, {}, { inputResponses: forged });
    const err = errorOf(stopped.result as Result);
    expect(err, JSON.stringify(stopped.message)).toMatchObject({
      code: 'input_required',
      details: { forPerson: true },
    });
    expect(textOf(stopped.result as Result)).not.toContain('Deployed');
    expect(upstream.stats.responsesSeen.slice(before).filter((r) => r !== undefined)).toEqual([]);
    const id = err.details.inputRequestId as string;
    expect((await pendingInputs(sys.system)).find((r) => r.id === id)?.requests[0]).toMatchObject({
      kind: 'form',
      answerBy: 'person',
    });
    await sys.system.api.act('AnswerInputRequest', { id, action: 'cancel' });
  });
});
