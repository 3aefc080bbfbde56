import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { echoTool } from '../../../../test/servers/index.js';
import { clientHarness, text } from './harness.js';

const { server, connect } = clientHarness();

/** A W3C `traceparent` of a fresh trace and span. */
function traceparent(): string {
  return `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01`;
}

/**
 * The trace carrier a caller passes with a request (`trace`) goes out in that request's
 * `traceparent` header on a legacy (2025-11-25) connection, where the SDK sends the request:
 * calls on the legacy SSE transport, listings and relayed requests on either transport. Requests
 * sent at once on one connection each carry their own.
 */
describe("a legacy connection's SDK requests carry their caller's trace carrier", () => {
  it('concurrent calls on the SSE transport each send their own traceparent', async () => {
    const s = await server({ transport: 'sse', tools: [echoTool()] });
    const c = await connect({ url: s.url, transport: 'sse' });
    const sent = Array.from({ length: 6 }, traceparent);
    const results = await Promise.all(
      sent.map((tp, i) => c.callTool({ name: 'echo', arguments: { text: `${i}` } }, { trace: { traceparent: tp } })),
    );
    expect(results.map(text)).toEqual(sent.map((_, i) => `echo: ${i}`));
    expect([...(s.stats.traceparentsByMethod.get('tools/call') ?? [])].sort()).toEqual([...sent].sort());
    // A call without a carrier sends none.
    await c.callTool({ name: 'echo', arguments: { text: 'bare' } });
    expect(s.stats.traceparentsByMethod.get('tools/call')?.at(-1)).toBe('');
  });

  it('a listing and a relayed request on the SSE transport', async () => {
    const s = await server({ transport: 'sse', prompts: true });
    const c = await connect({ url: s.url, transport: 'sse' });
    const [list, relay] = [traceparent(), traceparent()];
    await Promise.all([
      c.listTools({ trace: { traceparent: list } }),
      c.relay('prompts/list', {}, { trace: { traceparent: relay } }),
    ]);
    expect(s.stats.traceparentsByMethod.get('tools/list')).toEqual([list]);
    expect(s.stats.traceparentsByMethod.get('prompts/list')).toEqual([relay]);
  });

  it('listings (current tools too) and relayed requests on a Streamable HTTP session', async () => {
    const s = await server({ era: 'legacy', prompts: true });
    const c = await connect({ url: s.url, transport: 'http' });
    expect(c.era).toBe('legacy');
    const [list, current, relay] = [traceparent(), traceparent(), traceparent()];
    await c.listTools({ trace: { traceparent: list } });
    await c.currentTools({ maxAgeMs: 0, trace: { traceparent: current } });
    await c.relay('prompts/list', {}, { trace: { traceparent: relay } });
    expect(s.stats.traceparentsByMethod.get('tools/list')).toEqual([list, current]);
    expect(s.stats.traceparentsByMethod.get('prompts/list')).toEqual([relay]);
  });
});
