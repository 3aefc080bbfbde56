/**
 * Event streams (`GET /v1/events`) from one client address under fresh keys, as an attack on the
 * running registry: every fresh key is an account, so the per-account bound does not stop one
 * client; the per-address bound (across instances) and the per-process bound do, with 429 and
 * Retry-After naming the limit, before the envelope is checked, while another address still gets
 * its stream. The loopback peer is a trusted proxy, so each test address comes in X-Forwarded-For
 * as a load balancer would send it.
 */
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../support/api-client.js';
import { openEventStream, type OpenedEventStream } from '../support/fixtures/event-streams.js';
import { RegistryHarness } from '../support/registry-harness.js';
import { eventually } from '../support/system.js';

const PER_ADDRESS = 4;
const PER_PROCESS = 10;

/** A stream of a fresh key (a new account) from `address`. */
function openFrom(apiUrl: string, address: string, api = new ApiClient(apiUrl)): Promise<OpenedEventStream> {
  return openEventStream(apiUrl, api, { 'x-forwarded-for': address });
}

describe('event streams per client address and per process', () => {
  let h: RegistryHarness;
  const open: OpenedEventStream[] = [];
  const keep = (s: OpenedEventStream): OpenedEventStream => (open.push(s), s);

  beforeAll(async () => {
    h = await RegistryHarness.start({
      env: {
        TRUSTED_PROXIES: '127.0.0.0/8, ::1',
        QUOTA_EVENT_STREAMS_PER_ADDRESS: String(PER_ADDRESS),
        QUOTA_EVENT_STREAMS_PER_PROCESS: String(PER_PROCESS),
      },
      projector: false,
    });
  });
  afterAll(async () => {
    for (const s of open) s.close();
    await h?.stop();
  });

  it('refuses one address past its streams under fresh keys, before the envelope is checked; another address gets in', async () => {
    const attacker = '198.51.100.30';
    for (let i = 0; i < PER_ADDRESS; i++) expect(keep(await openFrom(h.apiUrl, attacker)).status).toBe(200);
    const refused = keep(await openFrom(h.apiUrl, attacker));
    expect(refused.status).toBe(429);
    expect(refused.body.error).toMatchObject({
      code: 'rate_limited',
      details: { limit: 'event_streams_per_address', max: PER_ADDRESS },
    });
    expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1);
    // Refused before the envelope is read: a garbage one gets the same answer, not invalid_input.
    const garbage = await fetch(new URL('/v1/events?envelope=xx', h.apiUrl), {
      headers: { 'x-forwarded-for': attacker },
    });
    expect(garbage.status).toBe(429);
    await garbage.body?.cancel();
    // Another client behind the same balancer streams.
    expect(keep(await openFrom(h.apiUrl, '198.51.100.31')).status).toBe(200);
    // A stream the attacker closes frees its address's slot.
    open.shift()?.close();
    await eventually(
      async () => {
        const s = await openFrom(h.apiUrl, attacker);
        return s.status === 200 ? keep(s) : undefined;
      },
      10_000,
      'an address slot freed by a close',
    );
  });

  it('refuses any address once the process holds its streams; a closed stream makes room', async () => {
    // Each from an address of its own (no address is near its bound): the process's bound refuses.
    let refused: OpenedEventStream | undefined;
    for (let i = 1; refused === undefined && i <= PER_PROCESS + 1; i++) {
      const s = keep(await openFrom(h.apiUrl, `203.0.113.${i}`));
      if (s.status !== 200) refused = s;
    }
    if (refused === undefined) throw new Error('no stream was refused');
    expect(refused.status).toBe(429);
    expect(refused.body.error).toMatchObject({
      code: 'rate_limited',
      details: { limit: 'event_streams_per_process', max: PER_PROCESS },
    });
    expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1);
    open.find((s) => s.status === 200)?.close();
    await eventually(
      async () => {
        const s = await openFrom(h.apiUrl, '203.0.113.201');
        return s.status === 200 ? keep(s) : undefined;
      },
      10_000,
      'a process slot freed by a close',
    );
  });

  it('counts the refusals by kind', async () => {
    const text = await (await fetch(new URL('/metrics', h.internalUrl))).text();
    for (const kind of ['event_streams_per_address', 'event_streams_per_process'])
      expect(text).toMatch(new RegExp(`mcpx_quota_rejections_total\\{[^}]*kind="${kind}"[^}]*\\} [1-9]`));
  });

  it('answers a Host with userinfo without a fault', async () => {
    const port = new URL(h.apiUrl).port;
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        { host: '127.0.0.1', port, path: '/healthz', headers: { host: `user@127.0.0.1:${port}` } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(status).toBeLessThan(500);
  });
});
