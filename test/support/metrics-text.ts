import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Telemetry } from '@mcpx/telemetry';

/**
 * The Prometheus text of services running in this process with `telemetry` (their `/metrics`, as
 * a scrape reads it): served once on a loopback port of its own, read, and closed.
 */
export async function metricsText(telemetry: Pick<Telemetry, 'metricsHandler'>): Promise<string> {
  const server = createServer((req, res) => telemetry.metricsHandler(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    return await (await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`)).text();
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/** The value of the first sample of `name` whose labels include every one of `labels` (0 when there is none). */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  const line = text
    .split('\n')
    .find((l) => (l.startsWith(`${name}{`) || l.startsWith(`${name} `)) && wanted.every((w) => l.includes(w)));
  return Number(line?.split(' ').pop() ?? 0);
}
