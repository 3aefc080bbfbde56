/**
 * Attack: anyone who reaches a service's public port reads its metrics and stats — every
 * account's call counts, servers and runs. The three services run
 * as their own processes, the way they are deployed; the public ports must answer 404 for
 * `/metrics` and `/stats`, and the internal port (loopback by default) serves them beside `/healthz`.
 */
import { connect } from 'node:net';
import { networkInterfaces } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProcessSystem, type ServiceProcess } from '../support/system.js';

const SERVICES = ['registry', 'projector', 'proxy'] as const;

/** A non-loopback IPv4 address of this machine, if it has one. */
function externalAddress(): string | undefined {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return undefined;
}

/** Whether a TCP connection to host:port is accepted (bounded by a 2 s socket timeout). */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: 2_000 });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(false));
  });
}

describe('metrics and stats are not served on the public ports', () => {
  let system: ProcessSystem;
  const service = (name: (typeof SERVICES)[number]): ServiceProcess => system.services.find((s) => s.name === name)!;

  beforeAll(async () => {
    system = await ProcessSystem.start({ env: { LOG_LEVEL: 'warn' } });
  }, 120_000);
  afterAll(async () => {
    await system?.stop();
  });

  it.each(SERVICES)(
    'the %s public port answers /healthz and 404 for /metrics and /stats, without a byte of either',
    async (name) => {
      const { url } = service(name);
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      for (const path of ['/metrics', '/stats', '/metrics?x=1', '/stats/']) {
        const res = await fetch(`${url}${path}`);
        const body = await res.text();
        expect(res.status, `${name} ${path}`).toBe(404);
        expect(body).not.toMatch(/# (HELP|TYPE) /);
        expect(body).not.toContain('"connections"');
      }
    },
  );

  it.each(SERVICES)('the %s internal port serves /healthz and the Prometheus text on /metrics', async (name) => {
    const { internalUrl } = service(name);
    const health = await fetch(`${internalUrl}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ ok: true, service: name });
    const metrics = await fetch(`${internalUrl}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toMatch(/^# (HELP|TYPE) /m);
  });

  it('the proxy serves /stats on its internal port only; the registry has none anywhere', async () => {
    const stats = await fetch(`${service('proxy').internalUrl}/stats`);
    expect(stats.status).toBe(200);
    expect(await stats.json()).toMatchObject({ connections: 0, runs: 0 });
    expect((await fetch(`${service('registry').internalUrl}/stats`)).status).toBe(404);
  });

  it('the internal ports listen on loopback only by default', async () => {
    const external = externalAddress();
    for (const name of SERVICES) {
      const port = Number(new URL(service(name).internalUrl).port);
      expect(await accepts('127.0.0.1', port)).toBe(true);
      if (external !== undefined)
        expect(await accepts(external, port), `${name} internal port on ${external}`).toBe(false);
    }
  });
});
