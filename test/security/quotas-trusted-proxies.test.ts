/**
 * The per-address rate limit behind a load balancer (SECURITY.md "Known gaps": every client
 * shared the balancer's bucket, and no setting said whose X-Forwarded-For to believe). With
 * TRUSTED_PROXIES unset a forged X-Forwarded-For buys a flooding client nothing; with the
 * balancer's address trusted each client behind it has its own bucket, and addresses a client
 * writes into the header itself never pick its bucket. A malformed setting stops the registry.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@mcpx/config';
import { startRegistry } from '@mcpx/registry';
import { RegistryHarness } from '../support/registry-harness.js';

const BURST = 3;
/** A slow refill: a bucket that is empty stays empty for the test's few seconds. */
const RATE = { RATE_ACTIONS_PER_ADDRESS: '0.01', RATE_ACTIONS_PER_ADDRESS_BURST: String(BURST) };

/** Unsigned garbage bodies from `xff` (none: no header): only the address limit tells 400 from 429. */
async function burst(apiUrl: string, n: number, xff?: string): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < n; i++) {
    const res = await fetch(new URL('/v1/actions', apiUrl), {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(xff !== undefined ? { 'x-forwarded-for': xff } : {}) },
      body: '{"not":"an envelope"}',
    });
    await res.body?.cancel();
    statuses.push(res.status);
  }
  return statuses;
}

describe('the per-address rate limit and TRUSTED_PROXIES', () => {
  describe('unset (the default): the socket peer is the client', () => {
    let h: RegistryHarness;
    beforeAll(async () => {
      h = await RegistryHarness.start({ env: RATE, projector: false });
    });
    afterAll(async () => {
      await h?.stop();
    });

    it('a client forging a new X-Forwarded-For on every request still empties its one bucket', async () => {
      const statuses: number[] = [];
      for (let i = 0; i < BURST + 3; i++) statuses.push(...(await burst(h.apiUrl, 1, `198.51.100.${i + 1}`)));
      expect(statuses.slice(0, BURST)).toEqual(Array(BURST).fill(400));
      expect(statuses.slice(BURST)).toEqual([429, 429, 429]);
    });
  });

  describe('the load balancer (here: loopback) trusted', () => {
    let h: RegistryHarness;
    beforeAll(async () => {
      h = await RegistryHarness.start({ env: { ...RATE, TRUSTED_PROXIES: '127.0.0.0/8, ::1' }, projector: false });
    });
    afterAll(async () => {
      await h?.stop();
    });

    it('each client behind it has its own bucket; what a client prepends to the header picks none', async () => {
      // One client empties its bucket; another client behind the same balancer is unaffected.
      expect(await burst(h.apiUrl, BURST + 1, '203.0.113.10')).toEqual([...Array(BURST).fill(400), 429]);
      expect(await burst(h.apiUrl, 1, '203.0.113.11')).toEqual([400]);
      // The first client writes a fresh address of its own choosing left of what the balancer appended: still its bucket.
      expect(await burst(h.apiUrl, 2, '192.0.2.77, 203.0.113.10')).toEqual([429, 429]);
      // A chain through another trusted proxy reaches the client behind it.
      expect(await burst(h.apiUrl, 1, '203.0.113.10, 127.0.0.9')).toEqual([429]);
      // No header from the balancer itself: its own address, a bucket of its own.
      expect(await burst(h.apiUrl, 1)).toEqual([400]);
      expect((await fetch(new URL('/healthz', h.apiUrl))).status).toBe(200);
    });
  });

  it('a malformed TRUSTED_PROXIES stops the registry at its start, naming the setting', async () => {
    const config = loadConfig('registry', {
      OUTBOUND_PROFILE: 'local',
      TRUSTED_PROXIES: '10.0.0.0/8, load-balancer.internal',
      HTTP_PORT: '0',
    });
    await expect(startRegistry(config)).rejects.toThrow(
      /TRUSTED_PROXIES: "load-balancer.internal" is not an address or a CIDR/,
    );
  });
});
