import { encodePayload, decodeInputRequestedEvent, decodeStrict, type InputRequestedEvent } from '@mcpx/contracts';
import { connectMcp } from '@mcpx/mcp-client';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InputMcpServer } from '../servers/input-mcp-server.js';
import { serviceUrls } from '../support/env.js';
import type { ProxySystem } from '../support/proxy-system.js';
import { eventually } from '../support/system.js';
import {
  DEPLOY_SCHEMA,
  acceptInput,
  askedInput,
  failure,
  invokeAnswered,
  pendingInputs,
  startInputSystem,
  resumedText,
  textOf,
} from './input-system.js';
import { ApiClient } from '../support/api-client.js';
import { SseSubscriber } from '../support/sse-client.js';

/**
 * Input requests end to end: a real SDK v2 server answers `input_required` mid-call, the
 * proxy records the question (its `requestState` sealed in Redis, never shown), a person answers
 * it through the action API (the console's and the CLI's path), and the re-sent call goes on,
 * once, for its own run, tool and arguments only.
 */
describe('input requests (input_required) through the proxy', () => {
  let system: ProxySystem;
  let upstream: InputMcpServer;
  let redis: Redis;
  const events: InputRequestedEvent[] = [];

  beforeAll(async () => {
    ({ system, upstream } = await startInputSystem());
    redis = new Redis(serviceUrls().redis);
    system.nc.subscribe(system.subjects.inputRequested(system.account), {
      callback: (_e, m) => void events.push(decodeInputRequestedEvent(m.data)),
    });
    await system.nc.flush();
  });

  afterAll(async () => {
    redis?.disconnect();
    await system?.stop();
    await upstream?.close();
  });

  it('"Deploy to prod?" stops the call with its question and id; answered, the re-sent call finishes, once', async () => {
    const asked = await askedInput(system.call('ops-agent', 'dep-1', 'ops__deploy', { env: 'prod' }));
    expect(asked.error.message).toContain('Deploy to prod?');
    expect(asked.error.message).toContain(asked.inputRequestId);
    expect(asked).toMatchObject({ tool: 'ops__deploy', server: 'ops', round: 1, forPerson: true });
    expect(asked.requests).toEqual([
      {
        key: 'confirm',
        kind: 'form',
        answerBy: 'person',
        message: 'Deploy to prod?',
        requestedSchema: DEPLOY_SCHEMA,
      },
    ]);
    await eventually(
      async () => events.find((e) => e.inputRequestId === asked.inputRequestId),
      10_000,
      'the input-requested event',
    );

    const listed = await pendingInputs(system);
    expect(listed.map((r) => r.id)).toContain(asked.inputRequestId);
    expect(JSON.stringify(listed)).not.toMatch(/requestState|sealed/i);

    // Not answered yet: the re-send waits, and nothing reaches the server.
    const calls = upstream.stats.calls;
    const waiting = await askedInput(
      system.call('ops-agent', 'dep-1', 'ops__deploy', { env: 'prod' }, { inputRequestId: asked.inputRequestId }),
    );
    expect(waiting).toMatchObject({ inputRequestId: asked.inputRequestId, waiting: true });
    expect(upstream.stats.calls).toBe(calls);

    // Content is checked against the requested schema.
    const bad = await failure(
      system.api.act('AnswerInputRequest', { id: asked.inputRequestId, action: 'accept', content: { confirm: 'yes' } }),
    );
    expect(bad).toMatchObject({ code: 'invalid_input', details: { field: 'content.confirm' } });
    const extra = await failure(
      system.api.act('AnswerInputRequest', {
        id: asked.inputRequestId,
        action: 'accept',
        content: { confirm: true, env: 'x' },
      }),
    );
    expect(extra.details.field).toBe('content.env');
    const { inputRequest } = await system.api.act<{ inputRequest: { status: string } }>('AnswerInputRequest', {
      id: asked.inputRequestId,
      action: 'accept',
      content: { confirm: true },
    });
    expect(inputRequest.status).toBe('answered');
    expect(await pendingInputs(system)).toEqual([]);

    // Bound to its call: another run or other arguments cannot use it, and nothing is consumed.
    expect(
      (
        await failure(
          system.call('ops-agent', 'dep-2', 'ops__deploy', { env: 'prod' }, { inputRequestId: asked.inputRequestId }),
        )
      ).details.reason,
    ).toBe('mismatch');
    expect(
      (
        await failure(
          system.call(
            'ops-agent',
            'dep-1',
            'ops__deploy',
            { env: 'staging' },
            { inputRequestId: asked.inputRequestId },
          ),
        )
      ).details.reason,
    ).toBe('mismatch');
    expect(
      (await failure(system.call('ops-agent', 'dep-1', 'ops__sign_in', {}, { inputRequestId: asked.inputRequestId })))
        .details.reason,
    ).toBe('mismatch');

    expect(await resumedText(system, 'ops-agent', 'dep-1', 'ops__deploy', { env: 'prod' }, asked.inputRequestId)).toBe(
      'Deployed to prod',
    );
    expect(upstream.stats.responsesSeen.at(-1)).toEqual({ confirm: { action: 'accept', content: { confirm: true } } });

    // Single use: a replay is refused and never reaches the server.
    const before = upstream.stats.calls;
    const replay = await failure(
      system.call('ops-agent', 'dep-1', 'ops__deploy', { env: 'prod' }, { inputRequestId: asked.inputRequestId }),
    );
    expect(replay).toMatchObject({ code: 'input_refused', details: { reason: 'used' } });
    expect(upstream.stats.calls).toBe(before);
    expect(
      (await failure(system.api.act('AnswerInputRequest', { id: asked.inputRequestId, action: 'decline' }))).code,
    ).toBe('conflict');

    // The answer is in the audit log: who answered which question, never what was typed.
    const { events: audit } = await system.api.act<{
      events: Array<{ action: string; target: { kind: string; name: string }; after?: Record<string, unknown> }>;
    }>('ListAuditEvents', {});
    const entry = audit.find((e) => e.action === 'AnswerInputRequest' && e.target.name === asked.inputRequestId);
    expect(entry?.after).toMatchObject({ action: 'accept', key: 'confirm', tool: 'ops__deploy', complete: true });
    expect(JSON.stringify(entry)).not.toContain('"confirm":true');
  });

  it('input-requested and input-answered reach the account on /v1/events, naming the call and never its question or answer; no other account hears them', async () => {
    const stream = await SseSubscriber.open(system.api);
    const stranger = await SseSubscriber.open(new ApiClient(system.api.apiUrl));
    try {
      const asked = await askedInput(system.call('ops-agent', 'ev-1', 'ops__deploy', { env: 'prod' }));
      const requested = await stream.waitFor(
        'input-requested',
        (d: { inputRequestId?: string }) => d.inputRequestId === asked.inputRequestId,
      );
      expect(requested.data).toMatchObject({
        agent: system.agentId('ops-agent'),
        run: 'ev-1',
        tool: 'ops__deploy',
        server: 'ops',
        forPerson: true,
      });
      await acceptInput(system, asked.inputRequestId, { confirm: true });
      const answered = await stream.waitFor(
        'input-answered',
        (d: { inputRequestId?: string }) => d.inputRequestId === asked.inputRequestId,
      );
      expect(JSON.stringify([requested.data, answered.data])).not.toMatch(/Deploy to prod|confirm/);
      expect(stranger.events.some((e) => e.event.startsWith('input-'))).toBe(false);
      expect(
        textOf(
          (
            await system.call(
              'ops-agent',
              'ev-1',
              'ops__deploy',
              { env: 'prod' },
              { inputRequestId: asked.inputRequestId },
            )
          ).result,
        ),
      ).toBe('Deployed to prod');
    } finally {
      await stream.close();
      await stranger.close();
    }
  });

  it('a declined question goes back to the server, which decides (here: the deployment is cancelled)', async () => {
    const asked = await askedInput(system.call('ops-agent', 'dec-1', 'ops__deploy', { env: 'prod' }));
    expect(
      (
        await failure(
          system.api.act('AnswerInputRequest', {
            id: asked.inputRequestId,
            action: 'decline',
            content: { confirm: true },
          }),
        )
      ).details.field,
    ).toBe('content');
    await system.api.act('AnswerInputRequest', { id: asked.inputRequestId, action: 'decline' });
    const err = await failure(
      system.call('ops-agent', 'dec-1', 'ops__deploy', { env: 'prod' }, { inputRequestId: asked.inputRequestId }),
    );
    expect(err.code).toBe('server_error');
    expect(err.message).toContain('Deployment to prod cancelled by the operator');
    expect(upstream.stats.responsesSeen.at(-1)).toEqual({ confirm: { action: 'decline' } });

    // Cancelled (the person dismissed it): the server is told so, and decides the same way.
    const dismissed = await askedInput(system.call('ops-agent', 'dec-2', 'ops__deploy', { env: 'prod' }));
    await system.api.act('AnswerInputRequest', { id: dismissed.inputRequestId, action: 'cancel' });
    const cancelled = await failure(
      system.call('ops-agent', 'dec-2', 'ops__deploy', { env: 'prod' }, { inputRequestId: dismissed.inputRequestId }),
    );
    expect(cancelled.message).toContain('Deployment to prod cancelled by the operator');
    expect(upstream.stats.responsesSeen.at(-1)).toEqual({ confirm: { action: 'cancel' } });
  });

  it('a URL question is for a person: the URL is shown, and it is accepted once the person says it is done', async () => {
    const asked = await askedInput(system.call('ops-agent', 'url-1', 'ops__sign_in', {}));
    expect(asked.requests).toEqual([
      {
        key: 'login',
        kind: 'url',
        answerBy: 'person',
        message: 'Sign in to Example to continue',
        url: 'https://auth.example.com/login?flow=mcpx',
      },
    ]);
    expect(
      (
        await failure(
          system.api.act('AnswerInputRequest', { id: asked.inputRequestId, action: 'accept', content: { done: true } }),
        )
      ).details.field,
    ).toBe('content');
    await system.api.act('AnswerInputRequest', { id: asked.inputRequestId, action: 'accept' });
    expect(await resumedText(system, 'ops-agent', 'url-1', 'ops__sign_in', {}, asked.inputRequestId)).toBe('Signed in');
  });

  it('a multi-round tool: each round is its own request; the server state goes back sealed-then-unsealed, never through the caller', async () => {
    const first = await askedInput(system.call('ops-agent', 'mr-1', 'ops__provision', {}));
    expect(first.round).toBe(1);
    await acceptInput(system, first.inputRequestId, { name: 'analytics' });
    const second = await askedInput(
      system.call('ops-agent', 'mr-1', 'ops__provision', {}, { inputRequestId: first.inputRequestId }),
    );
    expect(second.round).toBe(2);
    expect(second.inputRequestId).not.toBe(first.inputRequestId);
    expect(second.requests.map((r) => r.key)).toEqual(['region', 'tags']);
    // The server signed its state (it is readable base64): none of it reaches the caller.
    expect(JSON.stringify(second.error.toJSON())).not.toContain('v1.');
    expect(JSON.stringify(await pendingInputs(system))).not.toContain('analytics');

    const which = await failure(
      system.api.act('AnswerInputRequest', {
        id: second.inputRequestId,
        action: 'accept',
        content: { region: 'eu-west-1' },
      }),
    );
    expect(which).toMatchObject({ code: 'invalid_input', details: { field: 'key' } });
    expect(
      (
        await failure(
          system.api.act('AnswerInputRequest', {
            id: second.inputRequestId,
            key: 'region',
            action: 'accept',
            content: { region: 'mars' },
          }),
        )
      ).details.field,
    ).toBe('content.region');
    await system.api.act('AnswerInputRequest', {
      id: second.inputRequestId,
      key: 'region',
      action: 'accept',
      content: { region: 'eu-west-1' },
    });
    // Half answered: still waiting.
    expect(
      (
        await askedInput(
          system.call('ops-agent', 'mr-1', 'ops__provision', {}, { inputRequestId: second.inputRequestId }),
        )
      ).waiting,
    ).toBe(true);
    await system.api.act('AnswerInputRequest', {
      id: second.inputRequestId,
      key: 'tags',
      action: 'accept',
      content: { tags: ['prod', 'pii'] },
    });
    expect(await resumedText(system, 'ops-agent', 'mr-1', 'ops__provision', {}, second.inputRequestId)).toBe(
      'Provisioned analytics in eu-west-1 tagged prod,pii',
    );
    expect(upstream.stats.statesSeen.at(-1)).toBe(JSON.stringify({ step: 'named', name: 'analytics' }));
  });

  it('a tampered state is refused before the server is called; a caller never supplies one; the server refuses a forged one', async () => {
    const first = await askedInput(system.call('ops-agent', 'tm-1', 'ops__provision', {}));
    await system.api.act('AnswerInputRequest', { id: first.inputRequestId, action: 'accept', content: { name: 'x' } });
    const second = await askedInput(
      system.call('ops-agent', 'tm-1', 'ops__provision', {}, { inputRequestId: first.inputRequestId }),
    );
    await system.api.act('AnswerInputRequest', {
      id: second.inputRequestId,
      key: 'region',
      action: 'accept',
      content: { region: 'us-east-1' },
    });
    await system.api.act('AnswerInputRequest', {
      id: second.inputRequestId,
      key: 'tags',
      action: 'accept',
      content: {},
    });

    const key = `${system.env.REDIS_PREFIX ?? ''}input:${system.account}:${second.inputRequestId}`;
    const stored = JSON.parse((await redis.get(key))!) as { sealedState: string };
    expect(stored.sealedState).not.toContain('named');
    const [keyId, body] = stored.sealedState.split('.') as [string, string];
    const bytes = Buffer.from(body, 'base64');
    bytes[bytes.length - 20] = (bytes[bytes.length - 20] ?? 0) ^ 0xff;
    await redis.set(key, JSON.stringify({ ...stored, sealedState: `${keyId}.${bytes.toString('base64')}` }), 'KEEPTTL');
    const calls = upstream.stats.calls;
    const err = await failure(
      system.call('ops-agent', 'tm-1', 'ops__provision', {}, { inputRequestId: second.inputRequestId }),
    );
    expect(err).toMatchObject({ code: 'input_refused', details: { reason: 'tampered' } });
    expect(upstream.stats.calls).toBe(calls);

    // A requestState in a call request is refused outright (the proxy keeps the server's).
    const raw = await system.nc.request(
      system.subjects.proxyCall,
      encodePayload({
        account: system.account,
        agent: system.agentId('ops-agent'),
        run: 'tm-2',
        callId: 'c1',
        tool: 'ops__provision',
        arguments: {},
        requestState: 'v1.forged',
      }),
      { timeout: 10_000 },
    );
    expect(decodeStrict(raw.data, 'reply')).toMatchObject({
      ok: false,
      error: { code: 'invalid_input', details: { field: 'requestState' } },
    });
    expect(upstream.stats.calls).toBe(calls);
    // Through InvokeTool a requestState is refused too, by name, before anything runs (the action's
    // table names no such field): the server sees no call.
    const viaApi = await failure(
      system.api.act('InvokeTool', {
        agent: 'ops-agent',
        tool: 'ops__provision',
        arguments: {},
        requestState: 'v1.forged',
      }),
    );
    expect(viaApi).toMatchObject({ code: 'invalid_input', details: { field: 'requestState' } });
    expect(upstream.stats.calls).toBe(calls);

    // And the server itself refuses a forged state (its HMAC), whoever sends it.
    const direct = await connectMcp({ url: upstream.url, capabilities: { elicitation: { form: {} } } });
    try {
      await expect(
        direct.callTool({
          name: 'provision',
          arguments: {},
          requestState: 'v1.eyJwIjp7InN0ZXAiOiJuYW1lZCJ9fQ.forged',
          inputResponses: {},
        } as never),
      ).rejects.toThrow(/requestState/);
    } finally {
      await direct.close();
    }
  });

  it('sampling goes to a runtime that samples, and fails saying so for one that does not; roots are refused', async () => {
    const refused = await failure(system.call('ops-agent', 'sm-1', 'ops__summarize', { text: 'a long diff' }));
    expect(refused).toMatchObject({ code: 'input_refused', details: { reason: 'sampling_unsupported' } });
    expect(refused.message).toContain('does not declare that it samples');

    const seen: string[] = [];
    const done = await system.client.callAwaitingInput(
      {
        account: system.account,
        agent: system.agentId('ops-agent'),
        run: 'sm-2',
        tool: 'ops__summarize',
        arguments: { text: 'a long diff' },
        answers: { sampling: true },
      },
      {
        waitMs: 30_000,
        answer: (questions) => {
          seen.push(...questions.map((q) => `${q.kind}:${q.key}`));
          return Promise.resolve({
            summary: {
              role: 'assistant',
              content: { type: 'text', text: 'it is long' },
              model: 'test-model',
              stopReason: 'endTurn',
            },
          });
        },
      },
    );
    expect(seen).toEqual(['sampling:summary']);
    expect(textOf(done.result)).toBe('summary: it is long');

    // A runtime answer that is not a sampling result is refused, naming the field.
    const asked = await askedInput(
      system.call('ops-agent', 'sm-3', 'ops__summarize', { text: 'x' }, { answers: { sampling: true } }),
    );
    expect(asked.forPerson).toBe(false);
    const bad = await failure(
      system.call(
        'ops-agent',
        'sm-3',
        'ops__summarize',
        { text: 'x' },
        {
          answers: { sampling: true },
          inputRequestId: asked.inputRequestId,
          inputResponses: { summary: { text: 'no' } },
        },
      ),
    );
    expect(bad).toMatchObject({ code: 'invalid_input', details: { field: 'inputResponses.summary.role' } });

    // Roots are never shared: the connector does not declare them, so the server cannot ask.
    const roots = await failure(system.call('ops-agent', 'rt-1', 'ops__list_roots', {}));
    expect(roots.code).toBe('server_error');
    expect(roots.message).toMatch(/roots/);
  });

  it('callAwaitingInput waits for a person and finishes the call; InvokeTool is the same door', async () => {
    const asked: string[] = [];
    const waiting = system.client.callAwaitingInput(
      {
        account: system.account,
        agent: system.agentId('ops-agent'),
        run: 'aw-1',
        tool: 'ops__deploy',
        arguments: { env: 'eu' },
      },
      { waitMs: 60_000, pollMs: 1_000, onInputRequired: (r) => asked.push(r.inputRequestId) },
    );
    const id = await eventually(
      async () => (await pendingInputs(system)).find((r) => r.run === 'aw-1')?.id,
      20_000,
      'the question to be listed',
    );
    await system.api.act('AnswerInputRequest', { id, action: 'accept', content: { confirm: true } });
    expect(textOf((await waiting).result)).toBe('Deployed to eu');
    expect(asked).toEqual([id]);

    const { text } = await invokeAnswered(
      system,
      { agent: 'ops-agent', tool: 'ops__deploy', arguments: { env: 'us' } },
      { confirm: true },
    );
    expect(text).toBe('Deployed to us');
  });

  // Last: it makes sign_in always_ask for the rest of the file.
  it('an always_ask call approved before it asked is not stopped for approval again when re-sent with its answer', async () => {
    await system.api.act('SetToolPermission', { server: 'ops', tool: 'sign_in', permission: 'always_ask' });
    const approvalId = await eventually(
      async () => {
        const err = await failure(system.call('ops-agent', 'ap-1', 'ops__sign_in', {}));
        return err.code === 'approval_required' ? (err.details.approvalId as string) : undefined;
      },
      20_000,
      'sign_in to need an approval',
    );
    await system.api.act('ApproveToolCall', { approvalId });
    const asked = await askedInput(system.call('ops-agent', 'ap-1', 'ops__sign_in', {}, { approvalId }));
    await system.api.act('AnswerInputRequest', { id: asked.inputRequestId, action: 'accept' });
    expect(await resumedText(system, 'ops-agent', 'ap-1', 'ops__sign_in', {}, asked.inputRequestId)).toBe('Signed in');
    // A fresh call still stops for a human: the approval went with that one call.
    expect((await failure(system.call('ops-agent', 'ap-2', 'ops__sign_in', {}))).code).toBe('approval_required');
  });
});
