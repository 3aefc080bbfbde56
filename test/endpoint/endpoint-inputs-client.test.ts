import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startConformanceUpstream, type ConformanceUpstream } from '../servers/conformance-upstream.js';
import { startApprovalEndpoints, type Path } from './approval-endpoints.js';
import { modernCall } from './raw-mcp.js';
import { withBearer } from '../support/fixtures/bearer.js';

type Result = { content?: unknown; isError?: boolean; _meta?: Record<string, unknown> };
const textOf = (result: Result): string => (result.content as Array<{ text?: string }> | undefined)?.[0]?.text ?? '';
const errorOf = (result: Result): { code: string; details: Record<string, unknown> } | undefined =>
  result._meta?.['io.mcpx/error'] as { code: string; details: Record<string, unknown> } | undefined;
const ROOT = { uri: 'file:///home/user/project', name: 'project' };

/**
 * A server's questions go to the endpoint's client itself when it declared it can answer them:
 * forms (whatever the agent's `inputs.forms` says), sampling and, new here, roots (`roots/list`:
 * the client's roots are declared to the server for the call and its answer carried back). The
 * conformance fixture's `input_required` tools (2026-07-28) behind the endpoint, a real SDK v2
 * client answering, on both serving paths. Attack: the question's `requestState` presented by
 * another token answers nothing.
 */
describe('input requests to the endpoint client that can answer them', () => {
  let stack: Awaited<ReturnType<typeof startApprovalEndpoints>>;
  let upstream: ConformanceUpstream;
  const clients: Client[] = [];
  const tokens = { mine: '', other: '' };

  const url = (path: Path): string => `${stack.endpoints[path].url}/v1/agents/asks/mcp`;

  const connect = async (path: Path, roots: boolean): Promise<Client> => {
    const client = new Client(
      { name: 'inputs-client', version: '1.0.0' },
      {
        versionNegotiation: { mode: 'auto' },
        capabilities: { elicitation: { form: {} }, sampling: {}, ...(roots ? { roots: {} } : {}) },
      },
    );
    client.setRequestHandler('elicitation/create', (req) => {
      const fields = Object.keys(
        (req.params as { requestedSchema?: { properties?: Record<string, unknown> } }).requestedSchema?.properties ??
          {},
      );
      return Promise.resolve({
        action: 'accept' as const,
        content: Object.fromEntries(fields.map((f) => [f, f === 'ok' ? true : `my-${f}`])),
      });
    });
    client.setRequestHandler('sampling/createMessage', () =>
      Promise.resolve({
        role: 'assistant' as const,
        content: { type: 'text' as const, text: 'Hello' },
        model: 'client-model',
      }),
    );
    if (roots) client.setRequestHandler('roots/list', () => Promise.resolve({ roots: [ROOT] }));
    await client.connect(new StreamableHTTPClientTransport(new URL(url(path)), withBearer(tokens.mine)));
    clients.push(client);
    return client;
  };

  beforeAll(async () => {
    [stack, upstream] = await Promise.all([startApprovalEndpoints(), startConformanceUpstream()]);
    await stack.system.setServer('conf', upstream.url);
    const agent = await stack.system.createAgent('asks', ['conf'], 5);
    await stack.system.api.act('UpdateAgent', {
      agent,
      definition: { mcpServers: ['conf'], inputs: { forms: 'runtime' } },
    });
    tokens.mine = (
      await stack.system.api.act<{ token: string }>('CreateAgentToken', { agent: 'asks', name: 'mine' })
    ).token;
    tokens.other = (
      await stack.system.api.act<{ token: string }>('CreateAgentToken', { agent: 'asks', name: 'other' })
    ).token;
  }, 120_000);

  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await stack?.stop();
    await upstream?.close();
  });

  it.each(['lean', 'sdk'] as const)(
    '%s path: elicitation, sampling, roots, several at once and two rounds are answered by the client',
    async (path) => {
      const client = await connect(path, true);
      const call = async (name: string): Promise<string> => {
        const out = (await client.callTool({ name: `conf__${name}`, arguments: {} })) as Result;
        expect(out.isError, JSON.stringify(out)).toBeFalsy();
        return textOf(out);
      };
      expect(await call('test_input_required_result_elicitation')).toContain('my-name');
      expect(await call('test_input_required_result_sampling')).toBe('Sampling response: Hello');
      expect(await call('test_input_required_result_list_roots')).toBe(`Client exposed 1 root(s): ${ROOT.uri}`);
      expect(await call('test_input_required_result_multiple_inputs')).toBe('Hello my-name — 1 root(s) visible');
      expect(await call('test_input_required_result_multi_round')).toBe('Multi-round complete: my-name likes my-color');
      expect(await call('test_input_required_result_request_state')).toBe(
        'state-ok: requestState verified and confirmation received',
      );
      expect(await call('test_input_required_result_capabilities')).toBe('Capability-aware input requests fulfilled');
    },
  );

  it('a prompt asks too: prompts/get goes through the same input rounds, answered by the client', async () => {
    const client = await connect('sdk', false);
    const got = await client.getPrompt({ name: 'conf__test_input_required_result_prompt' });
    expect(got.messages).toEqual([
      { role: 'user', content: { type: 'text', text: 'Use the following context: my-context' } },
    ]);
  });

  it('a client that declared sampling only is asked only for sampling: the server sees its capabilities, no form goes to the owner', async () => {
    const client = new Client(
      { name: 'sampling-only', version: '1.0.0' },
      { versionNegotiation: { mode: 'auto' }, capabilities: { sampling: {} } },
    );
    client.setRequestHandler('sampling/createMessage', () =>
      Promise.resolve({
        role: 'assistant' as const,
        content: { type: 'text' as const, text: 'Hi' },
        model: 'client-model',
      }),
    );
    await client.connect(new StreamableHTTPClientTransport(new URL(url('sdk')), withBearer(tokens.mine)));
    clients.push(client);
    const out = (await client.callTool({
      name: 'conf__test_input_required_result_capabilities',
      arguments: {},
    })) as Result;
    expect(out.isError, JSON.stringify(out)).toBeFalsy();
    expect(textOf(out)).toBe('Capability-aware input requests fulfilled');
    // On the wire: the round it is given holds the sampling question alone.
    const asked = await modernCall(
      url('lean'),
      tokens.mine,
      'conf__test_input_required_result_capabilities',
      {},
      { sampling: {} },
    );
    expect(
      Object.values(asked.result?.inputRequests as Record<string, { method: string }>).map((q) => q.method),
    ).toEqual(['sampling/createMessage']);
  });

  it('a client that shares no roots is not asked for them: the server, told so, refuses as it would directly (-32021)', async () => {
    const client = await connect('lean', false);
    const refused = await client.callTool({ name: 'conf__test_input_required_result_list_roots', arguments: {} }).then(
      (out) => ({ out }),
      (err: unknown) => ({ err }),
    );
    expect(refused, JSON.stringify(refused)).toMatchObject({ err: { code: -32021 } });
    expect(JSON.stringify(refused)).not.toContain(ROOT.uri);
  });

  it("attack: another token presenting a client's question's requestState answers nothing", async () => {
    const caps = { roots: {} };
    const asked = await modernCall(url('lean'), tokens.mine, 'conf__test_input_required_result_list_roots', {}, caps);
    expect(asked.result?.resultType).toBe('input_required');
    const requestState = asked.result?.requestState as string;
    expect(Object.keys(asked.result?.inputRequests as object)).toEqual(['client_roots']);
    const answer = { requestState, inputResponses: { client_roots: { roots: [{ uri: 'file:///etc' }] } } };
    for (const path of ['lean', 'sdk'] as const) {
      const stolen = await modernCall(
        url(path),
        tokens.other,
        'conf__test_input_required_result_list_roots',
        {},
        caps,
        answer,
      );
      expect(stolen.message?.error).toMatchObject({
        code: -32602,
        data: { code: 'input_refused', details: { reason: 'mismatch', field: 'requestState' } },
      });
    }
    // A state altered on the way (the conformance tampered-state attack) is no state of ours: refused before anything is asked.
    for (const path of ['lean', 'sdk'] as const) {
      const tampered = await modernCall(
        url(path),
        tokens.mine,
        'conf__test_input_required_result_list_roots',
        {},
        caps,
        { ...answer, requestState: `${requestState}-TAMPERED` },
      );
      expect(tampered.message?.error).toMatchObject({ code: -32602, data: { details: { field: 'requestState' } } });
      const foreign = await modernCall(
        url(path),
        tokens.mine,
        'conf__test_input_required_result_list_roots',
        {},
        caps,
        { ...answer, requestState: 'eyJzZXJ2ZXIiOiJzdGF0ZSJ9' },
      );
      expect(foreign.message?.error).toMatchObject({
        code: -32602,
        data: { code: 'invalid_input', details: { field: 'requestState' } },
      });
    }
    // Its own token's answer is taken, once.
    const mine = await modernCall(
      url('sdk'),
      tokens.mine,
      'conf__test_input_required_result_list_roots',
      {},
      caps,
      answer,
    );
    expect(textOf(mine.result as Result)).toBe('Client exposed 1 root(s): file:///etc');
    // A roots answer that is not one is refused, naming the field.
    const again = await modernCall(url('lean'), tokens.mine, 'conf__test_input_required_result_list_roots', {}, caps);
    const bad = await modernCall(url('lean'), tokens.mine, 'conf__test_input_required_result_list_roots', {}, caps, {
      requestState: again.result?.requestState,
      inputResponses: { client_roots: { roots: [{ uri: 'javascript:alert(1)' }] } },
    });
    expect(errorOf(bad.result as Result)).toMatchObject({
      code: 'invalid_input',
      details: { field: 'inputResponses.client_roots.roots.0.uri' },
    });
  });
});
