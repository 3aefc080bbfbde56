import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodePayload, encodePayload, type ProxyCallReply } from '@mcpx/contracts';
import { startTestMcpServer, type TestMcpServer, type TestTool } from '../servers/index.js';
import { ProxySystem } from '../support/proxy-system.js';

const strictTool: TestTool = {
  name: 'strict',
  inputSchema: {
    type: 'object',
    properties: {
      name: { type: 'string', maxLength: 100 },
      tags: { type: 'array', maxItems: 5, items: { type: 'string' } },
    },
    required: ['name'],
    additionalProperties: false,
  },
  handler: (args) => ({ content: [{ type: 'text', text: `hi ${String(args.name)}` }] }),
};

describe.each(['modern', 'legacy'] as const)(
  'malformed requests on the NATS subjects (a %s server): typed errors, and the proxy keeps serving',
  (era) => {
    let system: ProxySystem;
    let upstream: TestMcpServer;
    let agent: string;

    beforeAll(async () => {
      [system, upstream] = await Promise.all([ProxySystem.start(), startTestMcpServer({ era, tools: [strictTool] })]);
      await system.setServer('demo', upstream.url);
      agent = await system.createAgent('agent', ['demo'], 1);
    });

    afterAll(async () => {
      await system?.stop();
      await upstream?.close();
    });

    const raw = async (payload: Uint8Array, subject = system.subjects.proxyCall): Promise<ProxyCallReply> =>
      decodePayload<ProxyCallReply>((await system.nc.request(subject, payload, { timeout: 10_000 })).data);
    const good = (over: Record<string, unknown> = {}): Record<string, unknown> => ({
      account: system.account,
      agent,
      run: 'm',
      callId: 'c1',
      tool: 'demo__strict',
      arguments: { name: 'x' },
      ...over,
    });
    const errorOf = (reply: ProxyCallReply): { code: string; message: string; details?: Record<string, unknown> } => {
      if (reply.ok) throw new Error('expected an error reply');
      return reply.error;
    };

    it('answers bytes that are not CBOR, empty payloads and non-maps with invalid_input', async () => {
      for (const bytes of [
        new TextEncoder().encode('{"json": "not cbor"}'),
        new Uint8Array([0xff, 0xfe, 0x1c]),
        encodePayload('a string'),
        encodePayload([1, 2, 3]),
      ]) {
        const e = errorOf(await raw(bytes));
        expect(e.code).toBe('invalid_input');
      }
      expect(errorOf(await raw(new Uint8Array(0))).code).toBe('invalid_input');
    });

    it('names the field of a wrong type or a missing one', async () => {
      const cases: Array<[Record<string, unknown>, string]> = [
        [good({ account: 42 }), 'account'],
        [good({ agent: undefined }), 'agent'],
        [good({ run: 'has spaces' }), 'run'],
        [good({ callId: 'x'.repeat(200) }), 'callId'],
        [good({ tool: '' }), 'tool'],
        [good({ arguments: [1, 2] }), 'arguments'],
        [good({ arguments: 'text' }), 'arguments'],
        [good({ timeoutMs: -5 }), 'timeoutMs'],
        [good({ timeoutMs: 'soon' }), 'timeoutMs'],
      ];
      for (const [req, field] of cases) {
        const e = errorOf(await raw(encodePayload(req)));
        expect(e.code, field).toBe('invalid_input');
        expect(e.details?.field, field).toBe(field);
      }
    });

    it('refuses hostile arguments without calling: deep nesting, huge strings, wide arrays', async () => {
      const before = upstream.stats.calls;
      let deep: unknown = 'leaf';
      for (let i = 0; i < 500; i++) deep = [deep];
      expect(errorOf(await raw(encodePayload(good({ arguments: { name: 'x', deep } }))))).toMatchObject({
        code: 'invalid_input',
      });
      const huge = errorOf(await raw(encodePayload(good({ arguments: { name: 'y'.repeat(700_000) } }))));
      expect(huge.code).toBe('invalid_arguments');
      const wide = errorOf(
        await raw(encodePayload(good({ arguments: { name: 'x', tags: Array.from({ length: 50_000 }, () => 't') } }))),
      );
      expect(wide.code).toBe('invalid_arguments');
      const extra = errorOf(await raw(encodePayload(good({ arguments: { name: 'x', nope: true } }))));
      expect(extra).toMatchObject({ code: 'invalid_arguments', details: { contract: { name: 'demo__strict' } } });
      expect(upstream.stats.calls).toBe(before);
    });

    it('keeps serving after all of it, on the queue group and on its sticky subject', async () => {
      const reply = await raw(encodePayload(good()));
      expect(reply.ok).toBe(true);
      if (!reply.ok) return;
      expect(reply.result.text).toBe('hi x');
      const sticky = await raw(new Uint8Array([0x01]), system.subjects.proxyInstanceCall(reply.instance));
      expect(errorOf(sticky).code).toBe('invalid_input');
      const again = await raw(encodePayload(good({ callId: 'c2' })), system.subjects.proxyInstanceCall(reply.instance));
      expect(again.ok).toBe(true);
      expect(system.proxies[0]!.stats().results.invalid_input).toBeGreaterThanOrEqual(10);
    });
  },
);
