import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WireError, encodePayload, makeSubjects } from '@mcpx/contracts';
import { DEFAULT_LIVENESS, ProxyClient } from '@mcpx/proxy-client';
import { serviceUrls, uniqueNamespace } from '../support/env.js';

/**
 * The result of a call reply is decoded by its field rules (`proxyResultValue` of contracts), not
 * cast: a result that breaks one is the responder's fault, `maybe_executed` (the call may have
 * run: never retried) naming the field; a whole one reaches the caller as sent.
 */
describe("the proxy client decodes a call reply's result (real NATS)", () => {
  let nc: NatsConnection;
  const subjects = makeSubjects(uniqueNamespace().natsPrefix);

  beforeAll(async () => {
    nc = await connect({ servers: serviceUrls().nats, name: 'call-result-test' });
  });
  afterAll(async () => {
    await nc?.close();
  });

  it('a malformed result is maybe_executed naming its field; a whole one passes', async () => {
    const good = { summary: 'Ran t on the s MCP server', text: 'fine', result: { n: 1 }, durationMs: 4 };
    const replies: Array<[string, unknown]> = [
      ['reply.result.durationMs', { ...good, durationMs: 'slow' }],
      ['reply.result.summary', { text: 'no summary', durationMs: 1 }],
      ['reply.result.images[0].mimeType', { ...good, images: [{ data: 'iVBO' }] }],
      ['reply.result.content[1].type', { ...good, content: [{ type: 'text', text: 'a' }, { text: 'untyped' }] }],
      ['reply.result.isError', { ...good, content: [], isError: 'yes' }],
    ];
    const answers = [...replies.map(([, result]) => result), good];
    let i = 0;
    const sub = nc.subscribe(subjects.proxyCall, {
      queue: 'proxy',
      callback: (_e, m) => void m.respond(encodePayload({ ok: true, instance: 'p1', result: answers[i++] })),
    });
    const client = new ProxyClient(nc, subjects, { liveness: { ...DEFAULT_LIVENESS, afterMs: 0 } });
    try {
      await nc.flush();
      for (const [field] of replies) {
        const err = await client.call({ account: 'a', agent: 'b', run: `r${i}`, tool: 't' }).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(WireError);
        expect({ field, err }).toMatchObject({
          field,
          err: { code: 'maybe_executed', retryable: false, details: { field } },
        });
      }
      expect(await client.call({ account: 'a', agent: 'b', run: 'r-good', tool: 't' })).toMatchObject({
        instance: 'p1',
        result: good,
      });
    } finally {
      sub.unsubscribe();
    }
  });
});
