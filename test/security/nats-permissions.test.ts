import { connect, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodePayload, type ServerDiscoveredEvent, type Subjects } from '@mcpx/contracts';
import { type RuntimeConnection } from '@mcpx/proxy-client';
import { defaultTools, progressTool, startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import type { ApiClient } from '../support/api-client.js';
import type { NatsAuthServer } from '../support/nats-auth-server.js';
import { eventually } from '../support/system.js';
import { startLeastPrivilegeSystem, type LeastPrivilegeSystem } from '../support/fixtures/least-privilege.js';

/**
 * The stack's NATS with the project's authorization (docs/bus.md#users), the three services connected
 * with their own users, and an attacker holding the runtime's credentials (or none): each attack
 * in SECURITY.md is refused with the permission violation the client sees, and a call through the
 * proxy still works after every one of them.
 */
describe('NATS least privilege against the real services', () => {
  let nats: NatsAuthServer;
  let api: ApiClient;
  let runtime: RuntimeConnection;
  let subjects: Subjects;
  let agent: string;
  let fixture: LeastPrivilegeSystem<TestMcpServer> | undefined;
  let prefix: string;

  beforeAll(async () => {
    fixture = await startLeastPrivilegeSystem({
      upstream: () => startTestMcpServer({ tools: [...defaultTools(), progressTool()] }),
      server: 'demo',
      agent: 'helper',
      projected: { what: 'demo__echo projected', ready: (tools) => tools.some((t) => t.name === 'demo__echo') },
    });
    ({ prefix, nats, api, runtime, subjects, agent } = fixture);
  }, 120_000);

  afterAll(() => fixture?.stop());

  /** A call through the proxy with the runtime's credentials: the end-to-end path still works. */
  const callEcho = async (message: string): Promise<string | undefined> => {
    const out = await runtime.client.call({
      account: api.principal,
      agent,
      run: `run-${message}`,
      tool: 'demo__echo',
      arguments: { text: message },
    });
    return out.result.text;
  };

  /** The error a subscription is closed with (nats.js resolves `closed` with it). */
  const subscriptionError = async (sub: Subscription): Promise<Error | void> => await sub.closed;

  /** A request the server refuses to let out: the client rejects it with the violation. */
  const publishRefused = async (
    nc: NatsConnection,
    subject: string,
    data: Uint8Array = new Uint8Array(),
  ): Promise<string> => {
    const err = await nc.request(subject, data, { timeout: 5_000 }).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err).toBeInstanceOf(Error);
    return err!.message;
  };

  it('a call through the proxy works end to end with every party on its own credentials', async () => {
    expect(await callEcho('hello')).toContain('hello');
  });

  it('refuses an anonymous connection and a wrong password', async () => {
    await expect(connect({ servers: nats.url, maxReconnectAttempts: 0 })).rejects.toMatchObject({
      name: 'AuthorizationError',
      message: 'Authorization Violation',
    });
    await expect(
      connect({ servers: nats.url, maxReconnectAttempts: 0, user: 'runtime', pass: 'not-the-password-at-all' }),
    ).rejects.toMatchObject({ name: 'AuthorizationError' });
    expect(await callEcho('after-anonymous')).toContain('after-anonymous');
  });

  it('a runtime cannot forge a discovery event (only the registry publishes mcp.events.>)', async () => {
    const forged: ServerDiscoveredEvent = {
      account: api.principal,
      server: 'demo',
      serverId: 'x',
      tools: [],
      status: { state: 'ok' },
      toolsChanged: true,
    } as unknown as ServerDiscoveredEvent;
    const subject = subjects.serverDiscovered(api.principal, 'demo');
    expect(await publishRefused(runtime.nc, subject, encodePayload(forged))).toBe(
      `Permissions Violation for Publish to "${subject}"`,
    );
    // Through JetStream's publish too (a request to the same subject).
    const js = await import('@nats-io/jetstream');
    await expect(js.jetstream(runtime.nc).publish(subject, encodePayload(forged))).rejects.toThrow(
      `Permissions Violation for Publish to "${subject}"`,
    );
    expect(await callEcho('after-forgery')).toContain('after-forgery');
  });

  it("a runtime hears its call's progress on its own credentials, and cannot forge one (only the proxy publishes it)", async () => {
    await eventually(
      async () =>
        JSON.stringify(await api.act('ListAgentTools', { agent })).includes('demo__progress') ? true : undefined,
      30_000,
      'demo__progress projected',
    );
    const heard: number[] = [];
    const out = await runtime.client.call({
      account: api.principal,
      agent,
      run: 'run-progress',
      tool: 'demo__progress',
      arguments: { steps: 2, gapMs: 200 },
      onProgress: (p) => heard.push(p.progress),
    });
    expect(out.result.text).toContain('done after 2');
    expect(heard).toEqual([1, 2]);
    const subject = subjects.callProgress(api.principal, 'run-progress', 'forged');
    expect(await publishRefused(runtime.nc, subject, encodePayload({ progress: 1 }))).toBe(
      `Permissions Violation for Publish to "${subject}"`,
    );
    expect(await callEcho('after-progress-forgery')).toContain('after-progress-forgery');
  });

  it('a runtime reads its tasks and hears their status on its own credentials, and cannot forge a status nor answer for the proxy', async () => {
    const { TaskClient } = await import('@mcpx/proxy-client');
    const tasks = new TaskClient(runtime.nc, subjects);
    expect(await tasks.listTasks(api.principal)).toEqual([]);
    const listening = runtime.nc.subscribe(subjects.taskEventsOf(api.principal));
    await runtime.nc.flush();
    const subject = subjects.taskStatus(api.principal, 'tsk_aaaaaaaaaaaaaaaaaaaaaaaa');
    const forged = {
      account: api.principal,
      agent,
      task: 'tsk_aaaaaaaaaaaaaaaaaaaaaaaa',
      state: 'completed',
      at: Date.now(),
    };
    expect(await publishRefused(runtime.nc, subject, encodePayload(forged))).toBe(
      `Permissions Violation for Publish to "${subject}"`,
    );
    const err = await subscriptionError(runtime.nc.subscribe(subjects.proxyTasks, { queue: 'proxy' }));
    expect(err).toMatchObject({
      name: 'PermissionViolationError',
      message: `Permissions Violation for Subscription to "${subjects.proxyTasks}" using queue "proxy"`,
    });
    listening.unsubscribe();
    expect(await callEcho('after-task-forgery')).toContain('after-task-forgery');
  });

  it("a runtime can neither hold an upstream subscription, forge a server's notice, nor hear another's (only the proxy says them, only the endpoint hears them)", async () => {
    const forged = { account: api.principal, server: 'demo', kind: 'updated', uri: 'test://forged', count: 1 };
    const notice = subjects.upstreamNotice(api.principal, 'demo');
    expect(await publishRefused(runtime.nc, notice, encodePayload(forged))).toBe(
      `Permissions Violation for Publish to "${notice}"`,
    );
    const err = await subscriptionError(runtime.nc.subscribe(subjects.upstreamNoticesAll));
    expect(err).toMatchObject({
      name: 'PermissionViolationError',
      message: `Permissions Violation for Subscription to "${subjects.upstreamNoticesAll}"`,
    });
    const hold = { op: 'hold', account: api.principal, agent, holder: 'forged', server: 'demo', kind: 'lists' };
    for (const subject of [subjects.proxyWatch, subjects.proxyInstanceWatch('proxy-1')]) {
      expect(await publishRefused(runtime.nc, subject, encodePayload(hold))).toBe(
        `Permissions Violation for Publish to "${subject}"`,
      );
    }
    expect(await callEcho('after-notice-forgery')).toContain('after-notice-forgery');
  });

  it('a runtime cannot answer calls: no subscription to mcp.proxy.call, the sticky route or cancels', async () => {
    for (const subject of [subjects.proxyCall, subjects.proxyInstanceCall('proxy-1'), `${prefix}mcp.proxy.*.call`]) {
      const err = await subscriptionError(runtime.nc.subscribe(subject, { queue: 'proxy' }));
      expect(err).toMatchObject({
        name: 'PermissionViolationError',
        message: `Permissions Violation for Subscription to "${subject}" using queue "proxy"`,
      });
    }
    expect(await callEcho('after-queue-group')).toContain('after-queue-group');
  });

  it('nobody but its owner reads a reply: _INBOX.> and other users’ inboxes are refused', async () => {
    for (const subject of [
      '_INBOX.>',
      '_INBOX_registry.>',
      '_INBOX_proxy.>',
      '_INBOX_projector.>',
      '>',
      '_INBOX_*.>',
    ]) {
      const err = await subscriptionError(runtime.nc.subscribe(subject));
      expect(err).toMatchObject({
        name: 'PermissionViolationError',
        message: `Permissions Violation for Subscription to "${subject}"`,
      });
    }
    // A runtime that does not use its own inbox prefix gets no reply at all.
    const { user, pass } = nats.credentials('runtime');
    const bare = await connect({ servers: nats.url, user, pass, maxReconnectAttempts: 0 });
    try {
      expect(await publishRefused(bare, subjects.proxyCall, encodePayload({}))).toMatch(
        /^Permissions Violation for Subscription to "_INBOX\./,
      );
    } finally {
      await bare.close();
    }
    expect(await callEcho('after-sniffing')).toContain('after-sniffing');
  });

  it('a runtime cannot touch the JetStream API: no stream delete, no consumer, no account info', async () => {
    for (const subject of [
      `$JS.API.STREAM.DELETE.${subjects.mcpEventsStream}`,
      `$JS.API.STREAM.PURGE.${subjects.agentToolsStream}`,
      '$JS.API.STREAM.LIST',
      `$JS.API.CONSUMER.CREATE.${subjects.mcpEventsStream}`,
      '$JS.API.INFO',
    ]) {
      expect(await publishRefused(runtime.nc, subject)).toBe(`Permissions Violation for Publish to "${subject}"`);
    }
    // The streams are still there (the operator may read them).
    const operator = await nats.connectAs('operator');
    try {
      const info = JSON.parse(
        new TextDecoder().decode(
          (await operator.request(`$JS.API.STREAM.INFO.${subjects.mcpEventsStream}`, undefined, { timeout: 5_000 }))
            .data,
        ),
      ) as {
        config?: { name: string };
      };
      expect(info.config?.name).toBe(subjects.mcpEventsStream);
    } finally {
      await operator.close();
    }
    expect(await callEcho('after-jetstream')).toContain('after-jetstream');
  });

  it('a runtime cannot ask the registry for OAuth URLs or reach the projector', async () => {
    for (const subject of [
      subjects.registryOAuthRefresh,
      subjects.projectorAgentTools,
      subjects.projectorLambdaSet,
      subjects.toolsObserved,
    ]) {
      expect(await publishRefused(runtime.nc, subject, encodePayload({ account: api.principal }))).toBe(
        `Permissions Violation for Publish to "${subject}"`,
      );
    }
  });

  it('the registry cannot publish agents.tools.changed (only the projector does), nor answer calls', async () => {
    const registry = await nats.connectAs('registry');
    try {
      const subject = subjects.agentToolsChanged(api.principal, agent);
      expect(await publishRefused(registry, subject, encodePayload({}))).toBe(
        `Permissions Violation for Publish to "${subject}"`,
      );
      const err = await subscriptionError(registry.subscribe(subjects.proxyCall, { queue: 'proxy' }));
      expect(err).toMatchObject({ name: 'PermissionViolationError' });
    } finally {
      await registry.close();
    }
    expect(await callEcho('after-registry')).toContain('after-registry');
  });

  it("the projector's PubAcks come on its own inbox: nobody may subscribe to the default _INBOX space", async () => {
    for (const role of ['projector', 'registry', 'proxy'] as const) {
      const nc = await nats.connectAs(role);
      try {
        for (const subject of ['_INBOX.*.*', '_INBOX.>', '_INBOX.abc.1']) {
          const err = await subscriptionError(nc.subscribe(subject));
          expect({ role, subject, err }).toMatchObject({
            err: {
              name: 'PermissionViolationError',
              message: `Permissions Violation for Subscription to "${subject}"`,
            },
          });
        }
      } finally {
        await nc.close();
      }
    }
    // The projector still publishes agent changes through JetStream (its PubAcks reach it): a new
    // agent's tools-changed message arrives, and its tools are projected.
    const seen: string[] = [];
    const sub = runtime.nc.subscribe(subjects.agentToolsChangedAll(), {
      callback: (_e, m) => void seen.push(m.subject),
    });
    try {
      await runtime.nc.flush();
      const second = (
        await api.act<{ agent: { id: string } }>('CreateAgent', {
          name: 'second',
          definition: { mcpServers: ['demo'] },
        })
      ).agent.id;
      await eventually(
        async () => (seen.includes(subjects.agentToolsChanged(api.principal, second)) ? true : undefined),
        30_000,
        'agent tools changed published',
      );
    } finally {
      sub.unsubscribe();
    }
  });

  it('the projector cannot publish discovery events, and the proxy cannot publish either stream', async () => {
    const projector = await nats.connectAs('projector');
    const proxy = await nats.connectAs('proxy');
    try {
      const discovered = subjects.serverDiscovered(api.principal, 'demo');
      expect(await publishRefused(projector, discovered, encodePayload({}))).toBe(
        `Permissions Violation for Publish to "${discovered}"`,
      );
      expect(await publishRefused(proxy, discovered, encodePayload({}))).toBe(
        `Permissions Violation for Publish to "${discovered}"`,
      );
      const changed = subjects.agentToolsChanged(api.principal, agent);
      expect(await publishRefused(proxy, changed, encodePayload({}))).toBe(
        `Permissions Violation for Publish to "${changed}"`,
      );
      expect(await publishRefused(proxy, `$JS.API.STREAM.DELETE.${subjects.agentToolsStream}`)).toMatch(
        /^Permissions Violation for Publish/,
      );
    } finally {
      await projector.close();
      await proxy.close();
    }
    expect(await callEcho('at-the-end')).toContain('at-the-end');
    // The services never tripped a permission of their own: the denials above are all the attackers'.
    const log = await nats.log();
    const services = log
      .split('\n')
      .filter((l) => /Violation/.test(l) && /nats\.js:(registry|projector|proxy) /.test(l));
    expect(services).toEqual([]);
  });
});
