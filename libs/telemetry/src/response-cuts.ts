import { trace, type Meter } from '@opentelemetry/api';

/** What an outbound fetch reports of a body it cut at a bound (`@mcpx/outbound`'s `OutboundError`, structurally). */
export interface ResponseCut {
  details: { bound: { name: string; limit: number } };
}

/**
 * The `onResponseCut` hook of an outbound fetch: counts each cut body in
 * `mcpx_outbound_responses_cut_total{bound}` and adds `outbound.response_cut` to the active span
 * (the call or discovery whose answer stopped short). Never throws.
 */
export function responseCutRecorder(meter: Meter): (cut: ResponseCut) => void {
  const cuts = meter.createCounter('mcpx_outbound_responses_cut_total', {
    description: 'Remote response bodies cut at a bound, by bound',
  });
  return (cut) => {
    try {
      const { name, limit } = cut.details.bound;
      cuts.add(1, { bound: name });
      trace.getActiveSpan()?.addEvent('outbound.response_cut', { 'mcpx.bound': name, 'mcpx.bound.limit': limit });
    } catch {
      // A metric must never break the response it reports on.
    }
  };
}
