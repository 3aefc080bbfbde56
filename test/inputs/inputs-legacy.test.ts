import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InputRequestView } from '@mcpx/contracts';
import { startLegacyElicitingServer, type LegacyElicitingServer } from '../servers/legacy-eliciting-server.js';
import { ProxySystem } from '../support/proxy-system.js';
import { eventually } from '../support/system.js';
import {
  DEPLOY_SCHEMA,
  acceptInput,
  askedInput,
  failure,
  invokeAnswered,
  pendingInputs,
  resumedText,
  textOf,
} from './input-system.js';

/**
 * A legacy-era (2025-11-25) server on SDK v1 that pushes `elicitation/create` in the middle of a
 * call gets the same treatment as a modern `input_required`: the caller gets `input_required`
 * with the question while the server's request is held, a person answers, the re-sent call hands
 * the answer to the server and its call goes on.
 */
describe('a legacy server that pushes elicitation/create (and sampling/createMessage)', () => {
  let system: ProxySystem;
  let upstream: LegacyElicitingServer;

  beforeAll(async () => {
    [system, upstream] = await Promise.all([ProxySystem.start(), startLegacyElicitingServer()]);
    await system.setServer('old', upstream.url);
    await system.createAgent('old-agent', ['old'], 2);
  });

  afterAll(async () => {
    await system?.stop();
    await upstream?.close();
  });

  it('"Deploy to prod?" reaches a person; answered, the held server call finishes', async () => {
    const asked = await askedInput(system.call('old-agent', 'lg-1', 'old__deploy', { env: 'prod' }));
    expect(asked.requests).toEqual([
      {
        key: 'elicitation',
        kind: 'form',
        answerBy: 'person',
        message: 'Deploy to prod?',
        requestedSchema: DEPLOY_SCHEMA,
      },
    ]);
    const listed = (await pendingInputs(system)).find((r: InputRequestView) => r.id === asked.inputRequestId);
    expect(listed?.era).toBe('legacy');
    expect(upstream.stats.elicitations).toBe(1);
    await acceptInput(system, asked.inputRequestId, { confirm: true });
    expect(await resumedText(system, 'old-agent', 'lg-1', 'old__deploy', { env: 'prod' }, asked.inputRequestId)).toBe(
      'Deployed to prod',
    );
    expect(upstream.stats.calls).toBe(1);
    expect(upstream.stats.answers.at(-1)).toMatchObject({ action: 'accept', content: { confirm: true } });
  });

  it("two questions in one call are two rounds; a declined one is the server's to answer", async () => {
    const first = await askedInput(system.call('old-agent', 'lg-2', 'old__provision', {}));
    await acceptInput(system, first.inputRequestId, { name: 'orders' });
    const second = await askedInput(
      system.call('old-agent', 'lg-2', 'old__provision', {}, { inputRequestId: first.inputRequestId }),
    );
    expect(second).toMatchObject({ round: 2 });
    expect(second.requests[0]).toMatchObject({ message: 'Which region?' });
    await acceptInput(system, second.inputRequestId, { region: 'us-east-1' });
    expect(await resumedText(system, 'old-agent', 'lg-2', 'old__provision', {}, second.inputRequestId)).toBe(
      'Provisioned orders in us-east-1',
    );

    // The failure is taken at once: the declined call may fail before the answer's own reply is read.
    const waiting = failure(
      system.client.callAwaitingInput(
        {
          account: system.account,
          agent: system.agentId('old-agent'),
          run: 'lg-3',
          tool: 'old__deploy',
          arguments: { env: 'prod' },
        },
        { waitMs: 60_000, pollMs: 1_000 },
      ),
    );
    const id = await eventually(
      async () => (await pendingInputs(system)).find((r) => r.run === 'lg-3')?.id,
      20_000,
      'the question',
    );
    await system.api.act('AnswerInputRequest', { id, action: 'decline' });
    const err = await waiting;
    expect(err.code).toBe('server_error');
    expect(err.message).toContain('Deployment to prod cancelled by the operator');
  });

  it('through InvokeTool: the unnamed run stays open for the re-sent call, which finishes the held server call', async () => {
    const { run, text } = await invokeAnswered(
      system,
      { agent: 'old-agent', tool: 'old__deploy', arguments: { env: 'us' } },
      { confirm: true },
    );
    expect(text).toBe('Deployed to us');
    await system.api.act('EndRun', { run });
  });

  it('a pushed sampling/createMessage goes to a runtime that samples and the held call goes on; for one that does not, the call fails saying so and nothing waits for a person', async () => {
    const sampledBefore = upstream.stats.sampled.length;
    const refused = await failure(system.call('old-agent', 'ls-1', 'old__summarize', { text: 'a long diff' }));
    expect(refused).toMatchObject({
      code: 'input_refused',
      details: { reason: 'sampling_unsupported', server: 'old' },
    });
    expect(refused.message).toContain('does not declare that it samples');
    expect((await pendingInputs(system)).filter((r) => r.run === 'ls-1')).toEqual([]);

    const calls = upstream.stats.calls;
    const asked = await askedInput(
      system.call('old-agent', 'ls-2', 'old__summarize', { text: 'a long diff' }, { answers: { sampling: true } }),
    );
    expect(asked).toMatchObject({ forPerson: false, round: 1 });
    expect(asked.requests).toEqual([
      {
        key: 'sampling',
        kind: 'sampling',
        answerBy: 'runtime',
        params: {
          messages: [{ role: 'user', content: { type: 'text', text: 'Summarize: a long diff' } }],
          maxTokens: 100,
        },
      },
    ]);
    expect((await pendingInputs(system)).filter((r) => r.run === 'ls-2')).toEqual([]);

    // An answer that is not a sampling result is refused, naming the field, and the held call waits on.
    // The held call re-sent with a runtime's answer to its sampling request.
    const resend = (sampling: Record<string, unknown>) =>
      system.call(
        'old-agent',
        'ls-2',
        'old__summarize',
        { text: 'a long diff' },
        { answers: { sampling: true }, inputRequestId: asked.inputRequestId, inputResponses: { sampling } },
      );
    const bad = await failure(resend({ text: 'no' }));
    expect(bad).toMatchObject({ code: 'invalid_input', details: { field: 'inputResponses.sampling.role' } });

    const done = await resend({
      role: 'assistant',
      content: { type: 'text', text: 'it is long' },
      model: 'test-model',
      stopReason: 'endTurn',
    });
    expect(textOf(done.result)).toBe('summary: it is long');
    expect(upstream.stats.calls).toBe(calls + 1);
    expect(upstream.stats.sampled.slice(sampledBefore)).toEqual([
      expect.objectContaining({ role: 'assistant', model: 'test-model' }),
    ]);

    // Used once: a replay is refused and never reaches the server.
    const replay = await failure(
      resend({ role: 'assistant', content: { type: 'text', text: 'again' }, model: 'test-model' }),
    );
    expect(replay).toMatchObject({ code: 'input_refused', details: { reason: 'used' } });
    expect(upstream.stats.calls).toBe(calls + 1);
  });

  it('once the run ended, the held call is gone: the re-sent call is refused (lost), and nothing runs twice', async () => {
    const asked = await askedInput(system.call('old-agent', 'lg-4', 'old__deploy', { env: 'eu' }));
    await system.client.endRun(system.account, 'lg-4');
    await acceptInput(system, asked.inputRequestId, { confirm: true });
    const calls = upstream.stats.calls;
    const err = await eventually(
      async () => {
        const e = await failure(
          system.call('old-agent', 'lg-4', 'old__deploy', { env: 'eu' }, { inputRequestId: asked.inputRequestId }),
        );
        return e;
      },
      10_000,
      'the refusal',
    );
    expect(err).toMatchObject({ code: 'input_refused', details: { reason: 'lost' } });
    expect(upstream.stats.calls).toBe(calls);
  });
  it('an answer over 64 KiB of JSON is refused naming content, and the question still waits: a good answer then finishes the call', async () => {
    const asked = await askedInput(system.call('old-agent', 'lg-big', 'old__deploy', { env: 'prod' }));
    const tooBig = await failure(
      system.api.act('AnswerInputRequest', {
        id: asked.inputRequestId,
        action: 'accept',
        content: { confirm: true, note: 'x'.repeat(70_000) },
      }),
    );
    expect(tooBig.code).toBe('invalid_input');
    expect(tooBig.details).toMatchObject({ field: 'content' });
    expect(tooBig.message).toContain('64 KiB');
    // Nothing was taken: the question is still listed, and answered well it lets the call go on.
    expect((await pendingInputs(system)).some((r: InputRequestView) => r.id === asked.inputRequestId)).toBe(true);
    await acceptInput(system, asked.inputRequestId, { confirm: true });
    expect(await resumedText(system, 'old-agent', 'lg-big', 'old__deploy', { env: 'prod' }, asked.inputRequestId)).toBe(
      'Deployed to prod',
    );
  });
});
