import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { startTestMcpServer, type TestMcpServer, type TestTool } from '../servers/index.js';
import { ProxySystem } from '../support/proxy-system.js';
import { INPUT_LIMITS } from '@mcpx/contracts';
import { startInputMcpServer, type InputMcpServer } from '../servers/input-mcp-server.js';
import { startCapabilityLiar, type CapabilityLiar } from './capability-liar.js';
import { INPUT_TOOLS, failure, pendingInputs } from './input-system.js';

/** A raw `input_required` result as a hostile modern server sends it (typed as a result for the test server). */
const asking = (name: string, body: Record<string, unknown>): TestTool => ({
  name,
  handler: () => ({ resultType: 'input_required', ...body }) as unknown as CallToolResult,
});

/**
 * A modern server that asks questions the connector cannot show (a nested form, a javascript: URL,
 * a flood of questions, a round with only state forever): each call fails with a typed error
 * naming the server, nothing is recorded for a person, and the proxy goes on serving.
 */
describe('hostile input requests', () => {
  let system: ProxySystem;
  let upstream: TestMcpServer;
  let stateOnlyCalls = 0;
  let foreverCalls = 0;
  let inputs: InputMcpServer;
  let liar: CapabilityLiar;

  beforeAll(async () => {
    const form = (message: string) => ({
      method: 'elicitation/create',
      params: { mode: 'form', message, requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } } } },
    });
    [system, upstream] = await Promise.all([
      ProxySystem.start(),
      startTestMcpServer({
        era: 'modern',
        tools: [
          asking('nested', {
            inputRequests: {
              q: {
                method: 'elicitation/create',
                params: {
                  mode: 'form',
                  message: 'Address?',
                  requestedSchema: {
                    type: 'object',
                    properties: { address: { type: 'object', properties: { street: { type: 'string' } } } },
                  },
                },
              },
            },
          }),
          asking('script_url', {
            inputRequests: {
              q: {
                method: 'elicitation/create',
                params: { mode: 'url', message: 'Click', url: 'javascript:alert(1)', elicitationId: 'e1' },
              },
            },
          }),
          asking('flood', {
            inputRequests: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`q${i}`, form(`question ${i}`)])),
          }),
          {
            name: 'state_only',
            handler: () => {
              stateOnlyCalls += 1;
              return { resultType: 'input_required', requestState: `s${stateOnlyCalls}` } as unknown as CallToolResult;
            },
          },
          asking('long_message', { inputRequests: { q: form('x'.repeat(100_000)) } }),
          { name: 'echo', handler: () => ({ content: [{ type: 'text', text: 'still here' }] }) },
          // A question with a megabyte of state: the connector would keep it, sealed, for every call.
          asking('fat_state', { inputRequests: { q: form('Go on?') }, requestState: 'S'.repeat(1024 * 1024) }),
          // Answered or not, asks again: a question every round, forever.
          {
            name: 'ask_forever',
            handler: () => {
              foreverCalls += 1;
              return {
                resultType: 'input_required',
                inputRequests: { again: form(`round ${foreverCalls}`) },
                requestState: `r${foreverCalls}`,
              } as unknown as CallToolResult;
            },
          },
        ],
      }),
    ]);
    await system.setServer('bad', upstream.url);
    await system.createAgent('victim', ['bad'], 7);
    const runtime = await system.createAgent('auto', ['bad'], 7);
    await system.api.act('UpdateAgent', {
      agent: runtime,
      definition: { mcpServers: ['bad'], inputs: { forms: 'runtime' } },
    });
  });

  afterAll(async () => {
    await system?.stop();
    await upstream?.close();
    await liar?.close();
    await inputs?.close();
  });

  it('questions that cannot be shown fail the call with a typed error naming the server; nothing waits for a person', async () => {
    for (const tool of ['nested', 'script_url', 'flood']) {
      const err = await failure(system.call('victim', `h-${tool}`, `bad__${tool}`, {}));
      expect(err.code, `${tool}: ${err.message}`).toBe('server_error');
      expect(err.details).toMatchObject({ server: 'bad', reason: 'invalid_input_request' });
    }
    expect(await pendingInputs(system)).toEqual([]);

    // A round with only state is sent straight back, a bounded number of times.
    const loop = await failure(system.call('victim', 'h-state', 'bad__state_only', {}));
    expect(loop.code).toBe('server_error');
    expect(loop.message).toContain('no question');
    expect(stateOnlyCalls).toBe(9);

    // A huge message is cut, not refused.
    const cut = await failure(system.call('victim', 'h-long', 'bad__long_message', {}));
    expect(cut.code).toBe('input_required');
    const listed = await pendingInputs(system);
    expect(listed).toHaveLength(1);
    expect((listed[0]!.requests[0] as { message: string }).message).toHaveLength(2_000);

    const ok = await system.call('victim', 'h-echo', 'bad__echo', {});
    expect(ok.result.text).toBe('still here');

    // Counted: the refusals and the question asked, on the proxy's /metrics.
    const metrics = await (await fetch(`${system.proxies[0]!.internalUrl}/metrics`)).text();
    expect(metrics).toMatch(/mcpx_proxy_input_requests_total\{[^}]*outcome="asked"[^}]*\} [1-9]/);
  });

  it('a round whose requestState is over the bound is refused (input_refused, state_too_large): nothing is kept, nobody is asked', async () => {
    const before = await pendingInputs(system);
    const err = await failure(system.call('victim', 'h-fat', 'bad__fat_state', {}));
    expect(err).toMatchObject({
      code: 'input_refused',
      details: { reason: 'state_too_large', server: 'bad', tool: 'bad__fat_state' },
    });
    expect(err.message).toContain(`over ${INPUT_LIMITS.requestStateBytes} bytes`);
    expect(await pendingInputs(system)).toEqual(before);
    const metrics = await (await fetch(`${system.proxies[0]!.internalUrl}/metrics`)).text();
    expect(metrics).toMatch(/mcpx_proxy_input_requests_total\{[^}]*reason="state_too_large"[^}]*\} 1/);
  });

  it('a server that asks for roots anyway is refused by the connector itself (input_refused, roots_unsupported); nothing waits for a person', async () => {
    // The connector declares no roots, so an SDK v2 server never asks for them: in front of one, a
    // liar says the connector did, and the server's list_roots asks.
    inputs = await startInputMcpServer();
    liar = await startCapabilityLiar(inputs.url, { roots: {} });
    await system.setServer('liar', liar.url);
    await system.createAgent('rooted', ['liar'], INPUT_TOOLS);
    const calls = inputs.stats.calls;
    const err = await failure(system.call('rooted', 'h-roots', 'liar__list_roots', {}));
    expect(err).toMatchObject({
      code: 'input_refused',
      details: { reason: 'roots_unsupported', server: 'liar', key: 'roots' },
    });
    expect(err.message).toContain('roots are deprecated in 2026-07-28');
    expect(liar.rewritten).toBeGreaterThan(0);
    // Asked once and never answered: no retry carries roots to the server, nothing waits for a person.
    expect(inputs.stats.calls).toBe(calls + 1);
    expect(inputs.stats.responsesSeen.at(-1)).toBeUndefined();
    expect((await pendingInputs(system)).filter((r) => r.run === 'h-roots')).toEqual([]);
  });

  it('a server that asks every round is stopped after the round limit, though each round was answered', async () => {
    const asked: number[] = [];
    const err = await failure(
      system.client.callAwaitingInput(
        {
          account: system.account,
          agent: system.agentId('auto'),
          run: 'h-forever',
          tool: 'bad__ask_forever',
          arguments: {},
          answers: { forms: true },
        },
        {
          waitMs: 60_000,
          answer: (questions, round) => {
            asked.push(round.round);
            return Promise.resolve(
              Object.fromEntries(questions.map((q) => [q.key, { action: 'accept', content: { ok: true } }])),
            );
          },
        },
      ),
    );
    expect(err).toMatchObject({ code: 'input_refused', details: { reason: 'too_many_rounds', server: 'bad' } });
    // Rounds 1..limit were asked and answered; the server's next question is not recorded.
    expect(asked).toEqual(Array.from({ length: INPUT_LIMITS.rounds }, (_, i) => i + 1));
    expect(foreverCalls).toBe(INPUT_LIMITS.rounds + 1);
    expect((await pendingInputs(system)).filter((r) => r.run === 'h-forever')).toEqual([]);
  });
});
