import type { Meter } from '@opentelemetry/api';
import type { Logger } from '@mcpx/log';

/** What counts the requests waiting for a person (the Redis stores of approvals and input requests). */
export interface PendingCounter {
  countPending(): Promise<number>;
}

/**
 * `mcpx_approvals_waiting` and `mcpx_input_requests_waiting`: approvals and input requests that
 * wait for a person, across every account (read from Redis at each scrape: two small commands).
 * Every proxy instance reports the same number: aggregate with `max`, not `sum`. While Redis is
 * out of reach nothing is reported (a gap, not a zero).
 */
export function registerWaitingGauges(
  meter: Meter,
  stores: { approvals: PendingCounter; inputs: PendingCounter },
  log: Logger,
): void {
  let warned = false;
  const observe = (name: string, description: string, store: PendingCounter): void => {
    const gauge = meter.createObservableGauge(name, { description });
    gauge.addCallback(async (result) => {
      try {
        result.observe(await store.countPending());
        warned = false;
      } catch (err) {
        if (!warned) log.warn('waiting requests not counted: redis unavailable', { metric: name, err: err as Error });
        warned = true;
      }
    });
  };
  observe(
    'mcpx_approvals_waiting',
    'Approvals of always_ask calls waiting for a person, every account',
    stores.approvals,
  );
  observe(
    'mcpx_input_requests_waiting',
    "Input requests (servers' questions) waiting for a person, every account",
    stores.inputs,
  );
}
