import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as dagCbor from '@ipld/dag-cbor';
import { decodeStrict, encodePayload } from '@mcpx/contracts';
import { sharedValueBomb } from '@mcpx/contracts/test-support';
import { startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import type { ApiClient } from '../support/api-client.js';
import { RegistryHarness } from '../support/registry-harness.js';
import { SseSubscriber } from '../support/sse-client.js';
import { eventually } from '../support/system.js';

/**
 * Issue 11 ("Why" 5, "Deliver" 4): one empty NATS message on a subject the registry listened to
 * closed that connection's reader (nats.js closes the connection when a callback throws). Here
 * every subject the registry, the projector and the proxy listen to gets malformed messages on
 * the real NATS — empty, garbage, a shared-value bomb, indefinite lengths, CBOR of the wrong
 * shape — and then each service must still answer on the same connection. Requests with a reply
 * subject get a typed `invalid_input`; nothing logged carries the payload.
 */

const MARK = 'GARBAGE-MARKER-4f2a';
const bytes = (...b: number[]): Uint8Array => Uint8Array.from(b);

/** Not a map at all, or not CBOR, or refused by a DAG-CBOR rule: every decoder refuses these. */
const undecodable: Array<[string, Uint8Array]> = [
  ['empty', new Uint8Array(0)],
  ['garbage', Uint8Array.from([0xff, 0xfe, ...new TextEncoder().encode(MARK)])],
  ['shared-value bomb', sharedValueBomb(40)],
  ['indefinite map', bytes(0xbf, 0x61, 0x61, 0x01, 0xff)],
  ['a list', encodePayload([1, 2, MARK])],
];
/** A map, but of the wrong shape for every payload (fields of the wrong types). */
const wrongShape: Array<[string, Uint8Array]> = [
  [
    'wrong shape',
    encodePayload({ account: 5, server: [MARK], agent: {}, run: 7, tools: MARK, callId: null, approvalId: 1 }),
  ],
];
const garbage = [...undecodable, ...wrongShape];

describe('malformed NATS messages on every subject a service listens to (real NATS)', () => {
  let h: RegistryHarness;
  let upstream: TestMcpServer;
  let api: ApiClient;
  let sse: SseSubscriber;
  let agentId: string;
  let instance: string;

  beforeAll(async () => {
    [h, upstream] = await Promise.all([RegistryHarness.start({ proxy: true }), startTestMcpServer()]);
    api = h.api();
    await api.act('SetMcpServer', { name: 'demo', config: { url: upstream.url } });
    agentId = (await api.act('CreateAgent', { name: 'helper', definition: { mcpServers: ['demo'] } })).agent.id;
    await eventually(
      async () => ((await api.act('ListAgentTools', { agent: 'helper' })).tools.length > 0 ? true : undefined),
      15_000,
      'projection',
    );
    instance = (await call('c0')).instance;
    sse = await SseSubscriber.open(api);
  });
  afterAll(async () => {
    await sse?.close();
    await h?.stop();
    await upstream?.close();
  });

  const request = async (subject: string, data: Uint8Array): Promise<Record<string, any>> =>
    decodeStrict<Record<string, any>>((await h.nc.request(subject, data, { timeout: 10_000 })).data, 'reply');
  const call = (callId: string, subject = h.subjects.proxyCall): Promise<Record<string, any>> =>
    request(
      subject,
      encodePayload({
        account: api.principal,
        agent: agentId,
        run: 'r1',
        callId,
        tool: 'demo__echo',
        arguments: { text: 'still here' },
      }),
    );

  it('answers malformed requests with a typed invalid_input: registry, projector, proxy', async () => {
    const requestSubjects = [
      h.subjects.registryOAuthRefresh,
      h.subjects.projectorAgentTools,
      h.subjects.projectorLambdaSet,
      h.subjects.projectorLambdaDelete,
      h.subjects.projectorToolsSearch,
      h.subjects.proxyCall,
      h.subjects.proxyInstanceCall(instance),
    ];
    for (const subject of requestSubjects) {
      for (const [what, data] of undecodable) {
        const reply = await request(subject, data);
        expect({ subject, what, reply }).toMatchObject({ reply: { ok: false, error: { code: 'invalid_input' } } });
      }
    }
    // Of the wrong shape: the registry's and the proxy's decoders name the first bad field.
    const firstBadField: Array<[string, string]> = [
      [h.subjects.registryOAuthRefresh, 'account'],
      [h.subjects.proxyCall, 'tool'],
      [h.subjects.proxyInstanceCall(instance), 'tool'],
    ];
    for (const [subject, field] of firstBadField) {
      const reply = await request(subject, wrongShape[0]![1]);
      expect({ subject, reply }).toMatchObject({
        reply: { ok: false, error: { code: 'invalid_input', details: { field } } },
      });
    }
    // The projector's request handlers check their own fields: invalid_input naming the field.
    for (const subject of [
      h.subjects.projectorAgentTools,
      h.subjects.projectorLambdaSet,
      h.subjects.projectorLambdaDelete,
      h.subjects.projectorToolsSearch,
    ]) {
      const reply = await request(subject, wrongShape[0]![1]);
      expect({ subject, reply }).toMatchObject({
        reply: { ok: false, error: { code: 'invalid_input', details: { field: 'account' } } },
      });
    }
    const acct = api.principal;
    const fieldCases: Array<[string, Record<string, unknown>, string]> = [
      [h.subjects.projectorAgentTools, { account: acct, agent: 7 }, 'agent'],
      [h.subjects.projectorAgentTools, { account: acct, agent: agentId, requested: ['demo__echo', 5] }, 'requested[1]'],
      [h.subjects.projectorAgentTools, { account: acct, agent: agentId, requested: MARK }, 'requested'],
      [h.subjects.projectorAgentTools, { account: 'a'.repeat(129), agent: agentId }, 'account'],
      [h.subjects.projectorLambdaSet, { account: acct, agent: [MARK], name: 'x', document: {} }, 'agent'],
      [h.subjects.projectorLambdaSet, { account: acct, agent: agentId, name: { x: 1 }, document: {} }, 'name'],
      [h.subjects.projectorLambdaSet, { account: acct, agent: agentId, name: 'fine', document: MARK }, 'document'],
      [h.subjects.projectorLambdaDelete, { account: acct, agent: agentId, name: 12 }, 'name'],
      [h.subjects.projectorToolsSearch, { account: acct, agent: '', query: 'echo' }, 'agent'],
      [h.subjects.projectorToolsSearch, { account: acct, query: 42 }, 'query'],
      [h.subjects.projectorToolsSearch, { account: acct, query: 'echo', limit: 'many' }, 'limit'],
    ];
    for (const [subject, payload, field] of fieldCases) {
      const reply = await request(subject, encodePayload(payload));
      expect({ subject, field, reply }).toMatchObject({
        reply: { ok: false, error: { code: 'invalid_input', details: { field } } },
      });
      expect(JSON.stringify(reply)).not.toContain(MARK);
    }
    // A good request on the same subjects still answers.
    expect(
      await request(
        h.subjects.projectorAgentTools,
        encodePayload({ account: acct, agent: agentId, requested: ['demo__echo'] }),
      ),
    ).toMatchObject({ ok: true });
    expect(
      await request(h.subjects.projectorToolsSearch, encodePayload({ account: acct, query: 'echo' })),
    ).toMatchObject({ ok: true });
  });

  it("reads a call another project's encoder wrote: 8-byte integer heads (2^32 and up), sorted keys, minimal heads", async () => {
    // @ipld/dag-cbor writes 2^40 as a 64-bit integer, as Go's and Python's CBOR encoders do; cbor-x
    // writes it as a float. Such a head once decoded to a BigInt: the proxy refused the timeout,
    // and the argument failed the upstream request's JSON.
    const data = dagCbor.encode({
      account: api.principal,
      agent: agentId,
      run: 'r1',
      callId: 'c-uint64',
      tool: 'demo__add',
      arguments: { a: 2 ** 40, b: -(2 ** 33) },
      timeoutMs: 2 ** 32 + 1,
    });
    expect(Buffer.from(data).includes(Buffer.from('1b0000010000000000', 'hex'))).toBe(true);
    const reply = await request(h.subjects.proxyCall, data);
    expect(reply).toMatchObject({ ok: true, result: { text: String(2 ** 40 - 2 ** 33) } });
  });

  it('drops malformed notifications and events, and every service goes on reading on the same connection', async () => {
    const acct = api.principal;
    const notifications = [
      // registry: quiet discovery, the event stream's subjects (with a subscriber open)
      h.subjects.toolsObserved,
      h.subjects.agentToolsChanged(acct, agentId),
      h.subjects.approvalRequested(acct),
      h.subjects.approvalDecided(acct),
      // projector (JetStream MCP_EVENTS captures these) and the proxy's catalog
      h.subjects.serverDiscovered(acct, 'demo'),
      h.subjects.serverDeleted(acct, 'ghost'),
      h.subjects.agentChanged(acct, 'ghost'),
      // proxy
      h.subjects.proxyCancel,
      h.subjects.proxyCallHeld,
      h.subjects.runEnded(acct, 'r1'),
    ];
    const before = sse.events.length;
    // The event stream logs through a logger of its own (on stderr): record it too, to check that
    // no line carries the payload.
    const stderr: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = (chunk: string | Uint8Array, ...rest: never[]) => {
      stderr.push(String(chunk));
      return write(chunk, ...rest);
    };
    try {
      await sendGarbageAndCheck(notifications, before);
    } finally {
      process.stderr.write = write;
    }
    const logs = [...h.logs, ...stderr].join('\n');
    expect(logs).toMatch(/dropped a malformed (cancel|held check|run-ended)/);
    expect(logs).toMatch(/dropped a malformed (agent-tools-changed event|server event|approval event)/);
    expect(logs).toMatch(/dropped a malformed event/);
    expect(logs).not.toContain(MARK);
  });

  async function sendGarbageAndCheck(notifications: string[], before: number): Promise<void> {
    const acct = api.principal;
    for (const subject of notifications) for (const [, data] of garbage) h.nc.publish(subject, data);
    await h.nc.flush();

    // The registry still reads: it answers a refresh request (no such server) and its event
    // stream delivers the next real event.
    const refresh = await request(h.subjects.registryOAuthRefresh, encodePayload({ account: acct, server: 'nope' }));
    expect(refresh).toMatchObject({ ok: false, error: { code: 'not_found' } });
    await api.act('SetMcpServer', { name: 'after', config: { url: upstream.url } });
    await sse.waitFor('mcp-servers-changed', (d) => d.server === 'after');
    // None of the garbage reached the stream (the one real event before it may have).
    expect(JSON.stringify(sse.events.slice(before))).not.toContain(MARK);

    // The projector still reads and consumes past the poisoned events: a new agent is projected.
    await api.act('CreateAgent', { name: 'later', definition: { mcpServers: ['demo', 'after'] } });
    await eventually(
      async () => ((await api.act('ListAgentTools', { agent: 'later' })).tools.length >= 4 ? true : undefined),
      15_000,
      'projection after garbage',
    );

    // The proxy still reads: calls on its queue subject and its sticky subject run.
    expect(await call('c1')).toMatchObject({ ok: true, result: { text: expect.stringContaining('still here') } });
    expect(await call('c2', h.subjects.proxyInstanceCall(instance))).toMatchObject({ ok: true, instance });
  }
});
