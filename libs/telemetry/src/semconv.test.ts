import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consumerBacklogGauge, setupTelemetry, type Telemetry } from './index.js';

describe('consumerBacklogGauge', () => {
  let t: Telemetry;
  let backlog = { pending: 7, ackPending: 2 };
  let fail = false;

  beforeAll(async () => {
    t = await setupTelemetry({ serviceName: 'backlog-test', metricsPort: 0 });
    consumerBacklogGauge(t.meter, 'projector', async () => {
      if (fail) throw new Error('no JetStream');
      return backlog;
    });
  });

  afterAll(async () => {
    await t?.shutdown();
  });

  const scrape = async (): Promise<string> => (await fetch(t.metricsUrl!)).text();

  it('reports pending and ack-pending of the consumer at each scrape', async () => {
    const first = await scrape();
    expect(first).toMatch(/mcpx_consumer_backlog\{consumer="projector",state="pending"[^}]*\} 7/);
    expect(first).toMatch(/mcpx_consumer_backlog\{consumer="projector",state="ack_pending"[^}]*\} 2/);
    backlog = { pending: 0, ackPending: 0 };
    expect(await scrape()).toMatch(/mcpx_consumer_backlog\{consumer="projector",state="pending"[^}]*\} 0/);
  });

  it('reports NaN (unknown), not the last value, when the consumer cannot be read', async () => {
    fail = true;
    const text = await scrape();
    expect(text).toMatch(/mcpx_consumer_backlog\{consumer="projector",state="pending"[^}]*\} NaN/);
    expect(text).toMatch(/mcpx_consumer_backlog\{consumer="projector",state="ack_pending"[^}]*\} NaN/);
    fail = false;
    backlog = { pending: 3, ackPending: 1 };
    expect(await scrape()).toMatch(/mcpx_consumer_backlog\{consumer="projector",state="pending"[^}]*\} 3/);
  });
});
