import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  decodeInputAnsweredEvent,
  type InputAnsweredEvent,
  type InputRequestView,
  type Subjects,
} from '@mcpx/contracts';
import { type InputRequired, type RuntimeConnection } from '@mcpx/proxy-client';
import { startInputMcpServer, type InputMcpServer } from '../servers/input-mcp-server.js';
import type { ApiClient } from '../support/api-client.js';
import type { NatsAuthServer } from '../support/nats-auth-server.js';
import { SseSubscriber } from '../support/sse-client.js';
import { eventually } from '../support/system.js';
import { INPUT_TOOLS } from './input-system.js';
import { startLeastPrivilegeSystem, type LeastPrivilegeSystem } from '../support/fixtures/least-privilege.js';

/**
 * The runtime's door on the stack's own NATS authorization (docs/bus.md#users): the services run as
 * processes on their own NATS users and the runtime holds only the runtime's credentials. A server's
 * question reaches the account (the proxy publishes input-requested, the registry streams it), the
 * person's answer reaches the waiting runtime (the registry publishes input-answered, the runtime
 * may hear it), and the call finishes, with no permission tripped by any party.
 */
describe('input requests over an authorized NATS, the runtime on its own credentials', () => {
  let nats: NatsAuthServer;
  let upstream: InputMcpServer;
  let api: ApiClient;
  let runtime: RuntimeConnection;
  let subjects: Subjects;
  let agent: string;
  let fixture: LeastPrivilegeSystem<InputMcpServer> | undefined;

  beforeAll(async () => {
    fixture = await startLeastPrivilegeSystem({
      upstream: () => startInputMcpServer(),
      server: 'ops',
      agent: 'ops-agent',
      projected: { what: 'the input tools projected', ready: (tools) => tools.length >= INPUT_TOOLS },
    });
    ({ nats, upstream, api, runtime, subjects, agent } = fixture);
  }, 120_000);

  afterAll(() => fixture?.stop());

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
