import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  decodeInputAnsweredEvent,
  makeSubjects,
  type InputAnsweredEvent,
  type InputRequestView,
  type Subjects,
} from '@mcpx/contracts';
import { connectRuntime, type InputRequired, type RuntimeConnection } from '@mcpx/proxy-client';
import { startInputMcpServer, type InputMcpServer } from '../servers/input-mcp-server.js';
import { ApiClient } from '../support/api-client.js';
import { uniqueNamespace } from '../support/env.js';
import { NatsAuthServer } from '../support/nats-auth-server.js';
import { SseSubscriber } from '../support/sse-client.js';
import { ProcessSystem, eventually } from '../support/system.js';
import { INPUT_TOOLS } from './input-system.js';

/**
 * The runtime's door on the stack's own NATS authorization (docs/bus.md#users): the services run as
 * processes on their own NATS users and the runtime holds only the runtime's credentials. A server's
 * question reaches the account (the proxy publishes input-requested, the registry streams it), the
 * person's answer reaches the waiting runtime (the registry publishes input-answered, the runtime
 * may hear it), and the call finishes, with no permission tripped by any party.
 */
describe('input requests over an authorized NATS, the runtime on its own credentials', () => {
  let nats: NatsAuthServer;
  let system: ProcessSystem;
  let upstream: InputMcpServer;
  let api: ApiClient;
  let runtime: RuntimeConnection;
  let subjects: Subjects;
  let agent: string;
  const prefix = uniqueNamespace().natsPrefix;

  beforeAll(async () => {
    nats = await NatsAuthServer.start({ prefix });
    [system, upstream] = await Promise.all([
      ProcessSystem.start({ env: { NATS_PREFIX: prefix }, natsEnv: (s) => nats.env(s) }),
      startInputMcpServer(),
    ]);
    subjects = makeSubjects(prefix);
    api = new ApiClient(system.apiUrl);
    await api.act('SetMcpServer', { name: 'ops', config: { url: upstream.url } });
    agent = (
      await api.act<{ agent: { id: string } }>('CreateAgent', {
        name: 'ops-agent',
        definition: { mcpServers: ['ops'] },
      })
    ).agent.id;
    await eventually(
      async () =>
        (await api.act<{ tools: unknown[] }>('ListAgentTools', { agent })).tools.length >= INPUT_TOOLS
          ? true
          : undefined,
      30_000,
      'the input tools projected',
    );
    const { user, pass } = nats.credentials('runtime');
    runtime = await connectRuntime({ url: nats.url, prefix, credentials: { user, pass }, maxReconnectAttempts: 0 });
  }, 120_000);

  afterAll(async () => {
    await runtime?.close();
    await upstream?.close();
    await system?.stop();
    await nats?.stop();
  });

  it('"Deploy to prod?" reaches the account on /v1/events, the answer reaches the waiting runtime, and the call finishes', async () => {
    const stream = await SseSubscriber.open(api);
    const heard: InputAnsweredEvent[] = [];
    // The runtime's own subscription to the answers (what callAwaitingInput waits on).
    const sub = runtime.nc.subscribe(subjects.inputAnswered(api.principal), {
      callback: (_e, m) => void heard.push(decodeInputAnsweredEvent(m.data)),
    });
    await runtime.nc.flush();
    try {
      const asked: InputRequired[] = [];
      // Re-sends only on the answered event: the poll is longer than the test may run, so a lost
      // event (a permission the registry or the runtime lacks) fails the test instead of hiding.
      const waiting = runtime.client.callAwaitingInput(
        { account: api.principal, agent, run: 'na-1', tool: 'ops__deploy', arguments: { env: 'prod' } },
        { waitMs: 300_000, pollMs: 300_000, onInputRequired: (r) => asked.push(r) },
      );
      const requested = await stream.waitFor('input-requested', (d: { run?: string }) => d.run === 'na-1');
      const id = (requested.data as { inputRequestId: string }).inputRequestId;
      const listed = (await api.act<{ inputRequests: InputRequestView[] }>('ListInputRequests', {})).inputRequests.find(
        (r) => r.id === id,
      );
      expect(listed?.requests[0]).toMatchObject({ key: 'confirm', message: 'Deploy to prod?', answerBy: 'person' });
      await api.act('AnswerInputRequest', { id, action: 'accept', content: { confirm: true } });
      expect((await waiting).result.text).toBe('Deployed to prod');
      expect(asked.map((r) => r.inputRequestId)).toEqual([id]);
      await eventually(
        async () => (heard.some((e) => e.inputRequestId === id) ? true : undefined),
        10_000,
        'the runtime to hear input-answered',
      );
      expect(upstream.stats.responsesSeen.at(-1)).toEqual({
        confirm: { action: 'accept', content: { confirm: true } },
      });
    } finally {
      sub.unsubscribe();
      await stream.close();
    }
    // Nobody tripped a permission on the way.
    const violations = (await nats.log()).split('\n').filter((l) => /Violation/.test(l));
    expect(violations).toEqual([]);
  }, 90_000);
});
