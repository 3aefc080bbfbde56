import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { startServiceHttp } from './service-http.js';
import type { MetricsHandler } from './setup.js';

const metricsHandler: MetricsHandler = (_req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain' });
  res.end('# TYPE mcpx_test counter\nmcpx_test 1\n');
};

describe('startServiceHttp', () => {
  it('serves /healthz on both ports and /metrics and the extras on the internal one only', async () => {
    const http = await startServiceHttp({
      service: 's',
      port: 0,
      host: '127.0.0.1',
      internalPort: 0,
      internalHost: '127.0.0.1',
      isReady: () => true,
      metricsHandler,
      extra: { '/stats': () => ({ n: 1 }) },
    });
    try {
      expect(http.url).not.toBe(http.internalUrl);
      for (const base of [http.url, http.internalUrl]) expect((await fetch(`${base}/healthz`)).status).toBe(200);
      expect((await fetch(`${http.url}/metrics`)).status).toBe(404);
      expect((await fetch(`${http.url}/stats`)).status).toBe(404);
      expect(await (await fetch(`${http.internalUrl}/metrics`)).text()).toContain('mcpx_test 1');
      expect(await (await fetch(`${http.internalUrl}/stats`)).json()).toEqual({ n: 1 });
    } finally {
      await http.close();
    }
  });

  it('when the internal port is taken, fails and leaves the public port closed', async () => {
    const squatter = createServer();
    await new Promise<void>((resolve) => squatter.listen(0, '127.0.0.1', resolve));
    const taken = (squatter.address() as AddressInfo).port;
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const publicPort = (probe.address() as AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    try {
      await expect(
        startServiceHttp({
          service: 's',
          port: publicPort,
          host: '127.0.0.1',
          internalPort: taken,
          internalHost: '127.0.0.1',
          isReady: () => true,
          metricsHandler,
        }),
      ).rejects.toThrow(/EADDRINUSE/);
      // The public port was released: it can be bound again.
      const again = createServer();
      await new Promise<void>((resolve, reject) => {
        again.once('error', reject);
        again.listen(publicPort, '127.0.0.1', resolve);
      });
      await new Promise<void>((resolve) => again.close(() => resolve()));
    } finally {
      await new Promise<void>((resolve) => squatter.close(() => resolve()));
    }
  });
});
