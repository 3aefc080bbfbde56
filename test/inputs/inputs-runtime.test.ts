import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InputRequestItem } from '@mcpx/contracts';
import type { InputMcpServer } from '../servers/input-mcp-server.js';
import type { ProxySystem } from '../support/proxy-system.js';
import { eventually } from '../support/system.js';
import { askedInput, failure, pendingInputs, startInputSystem, textOf } from './input-system.js';
import { generateKeyPair } from '@mcpx/envelope';
import { ApiClient } from '../support/api-client.js';

const TTL_MS = 3_000;

/**
 * Who answers, and for how long: an agent whose definition lets its runtime answer forms gets them
 * over the proxy client (never the server's state); without the runtime saying it can, they go to a
 * person. An unanswered question expires (APPROVAL_TTL_MS also bounds input requests).
 */
describe('input requests answered by the runtime, and expiry', () => {
  let system: ProxySystem;
  let upstream: InputMcpServer;

  beforeAll(async () => {
    ({ system, upstream } = await startInputSystem({
      inputs: { forms: 'runtime' },
      env: { APPROVAL_TTL_MS: String(TTL_MS) },
    }));
  });

  afterAll(async () => {
    await system?.stop();
    await upstream?.close();
  });

  it('the agent definition keeps inputs.forms and refuses anything else', async () => {
    const { agent } = await system.api.act<{ agent: { definition: { inputs?: { forms: string } } } }>('GetAgent', {
      agent: 'ops-agent',
    });
    expect(agent.definition.inputs).toEqual({ forms: 'runtime' });
    const bad = await failure(
      system.api.act('UpdateAgent', {
        agent: 'ops-agent',
        definition: { mcpServers: ['ops'], inputs: { forms: 'model' } },
      }),
    );
    expect(bad).toMatchObject({ code: 'invalid_input', details: { field: 'definition.inputs.forms' } });
  });

  it('a runtime that answers forms gets them (never the requestState) and the call goes on; nothing waits for a person', async () => {
    const seen: InputRequestItem[] = [];
    const done = await system.client.callAwaitingInput(
      {
        account: system.account,
        agent: system.agentId('ops-agent'),
        run: 'rt-1',
        tool: 'ops__provision',
        arguments: {},
        answers: { forms: true },
      },
      {
        waitMs: 30_000,
        answer: (questions) => {
          seen.push(...questions);
          const out: Record<string, unknown> = {};
          for (const q of questions) {
            if (q.key === 'name') out.name = { action: 'accept', content: { name: 'ledger' } };
            if (q.key === 'region') out.region = { action: 'accept', content: { region: 'eu-west-1' } };
            if (q.key === 'tags') out.tags = { action: 'accept', content: { tags: ['batch'] } };
          }
          return Promise.resolve(out);
        },
      },
    );
    expect(textOf(done.result)).toBe('Provisioned ledger in eu-west-1 tagged batch');
    expect(seen.map((q) => `${q.key}:${q.answerBy}`)).toEqual(['name:runtime', 'region:runtime', 'tags:runtime']);
    expect(JSON.stringify(seen)).not.toMatch(/requestState|v1\./);
    expect(await pendingInputs(system)).toEqual([]);

    // The runtime's answer is checked against the schema like a person's.
    const asked = await askedInput(
      system.call('ops-agent', 'rt-2', 'ops__deploy', { env: 'prod' }, { answers: { forms: true } }),
    );
    expect(asked.forPerson).toBe(false);
    const bad = await failure(
      system.call(
        'ops-agent',
        'rt-2',
        'ops__deploy',
        { env: 'prod' },
        {
          answers: { forms: true },
          inputRequestId: asked.inputRequestId,
          inputResponses: { confirm: { action: 'accept', content: { confirm: 1 } } },
        },
      ),
    );
    expect(bad).toMatchObject({ code: 'invalid_input', details: { field: 'inputResponses.confirm.content.confirm' } });
    // A runtime cannot answer for a person: a question it was not given is refused.
    const person = await askedInput(system.call('ops-agent', 'rt-3', 'ops__sign_in', {}, { answers: { forms: true } }));
    expect(person.requests[0]).toMatchObject({ kind: 'url', answerBy: 'person' });
    const forged = await failure(
      system.call(
        'ops-agent',
        'rt-3',
        'ops__sign_in',
        {},
        { inputRequestId: person.inputRequestId, inputResponses: { login: { action: 'accept' } } },
      ),
    );
    expect(forged.details.field).toBe('inputResponses.login');
  });

  it('without the runtime saying it answers forms, the form goes to a person', async () => {
    const asked = await askedInput(system.call('ops-agent', 'rt-4', 'ops__deploy', { env: 'prod' }));
    expect(asked.forPerson).toBe(true);
    expect(asked.requests[0]).toMatchObject({ key: 'confirm', answerBy: 'person' });
  });

  it("only an OWNER answers: a WRITER may list, not answer; an AGENT signer neither; another account's id is unknown", async () => {
    const asked = await askedInput(system.call('ops-agent', 'own-1', 'ops__deploy', { env: 'prod' }));
    const writer = generateKeyPair();
    await system.api.act('AuthorizeSigner', { principal: writer.principal, role: 'WRITER' });
    const asWriter = new ApiClient(system.api.apiUrl, writer, system.account);
    expect(
      (await asWriter.act<{ inputRequests: Array<{ id: string }> }>('ListInputRequests', {})).inputRequests.map(
        (r) => r.id,
      ),
    ).toContain(asked.inputRequestId);
    expect(
      (
        await failure(
          asWriter.act('AnswerInputRequest', {
            id: asked.inputRequestId,
            action: 'accept',
            content: { confirm: true },
          }),
        )
      ).code,
    ).toBe('forbidden');
    const agentKey = generateKeyPair();
    await system.api.act('AuthorizeSigner', { principal: agentKey.principal, role: 'AGENT', agents: ['ops-agent'] });
    const asAgent = new ApiClient(system.api.apiUrl, agentKey, system.account);
    expect((await failure(asAgent.act('ListInputRequests', {}))).code).toBe('forbidden');
    expect(
      (await failure(asAgent.act('AnswerInputRequest', { id: asked.inputRequestId, action: 'decline' }))).code,
    ).toBe('forbidden');
    const stranger = new ApiClient(system.api.apiUrl);
    expect(
      (await failure(stranger.act('AnswerInputRequest', { id: asked.inputRequestId, action: 'decline' }))).code,
    ).toBe('not_found');
    expect(
      (await failure(system.api.act('AnswerInputRequest', { id: 'not-an-id', action: 'decline' }))).details.field,
    ).toBe('id');
    expect(
      (await failure(system.api.act('AnswerInputRequest', { id: asked.inputRequestId, action: 'approve' }))).details
        .field,
    ).toBe('action');
  });

  it('an unanswered question expires: it leaves the list, cannot be answered, and the re-sent call is refused', async () => {
    const asked = await askedInput(system.call('ops-agent', 'ex-1', 'ops__deploy', { env: 'prod' }));
    await eventually(
      async () => ((await pendingInputs(system)).some((r) => r.id === asked.inputRequestId) ? undefined : true),
      30_000,
      'the question to expire',
    );
    const late = await failure(
      system.api.act('AnswerInputRequest', { id: asked.inputRequestId, action: 'accept', content: { confirm: true } }),
    );
    expect(late).toMatchObject({ code: 'conflict', details: { reason: 'expired' } });
    const calls = upstream.stats.calls;
    const refused = await failure(
      system.call('ops-agent', 'ex-1', 'ops__deploy', { env: 'prod' }, { inputRequestId: asked.inputRequestId }),
    );
    expect(refused).toMatchObject({ code: 'input_refused', details: { reason: 'expired' } });
    expect(upstream.stats.calls).toBe(calls);
  });
});
