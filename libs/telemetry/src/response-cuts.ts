import { trace, type Meter, type Span } from '@opentelemetry/api';

/** What an outbound fetch reports of a body it cut at a bound (`@mcpx/outbound`'s `OutboundError`, structurally). */
export interface ResponseCut {
  details: { bound: { name: string; limit: number } };
}

/**
 * Adds `outbound.response_cut` (`mcpx.bound`, `mcpx.bound.limit`) to `span`: the request whose
 * answer stopped short at a bound. A process whose context does not follow awaits adds it to the
 * span it holds (the call's upstream span, from the error the call failed with).
 */
export function addResponseCutEvent(span: Span, cut: ResponseCut): void {
  const { name, limit } = cut.details.bound;
  span.addEvent('outbound.response_cut', { 'mcpx.bound': name, 'mcpx.bound.limit': limit });
}

/**
 * The `onResponseCut` hook of an outbound fetch: counts each cut body in
 * `mcpx_outbound_responses_cut_total{bound}` and adds `outbound.response_cut` to the active span
 * (the call or discovery whose answer stopped short), when one is active where the cut is heard
 * (in an `explicit` process, none is: see {@link addResponseCutEvent}). Never throws.
 */
export function responseCutRecorder(meter: Meter): (cut: ResponseCut) => void {
  const cuts = meter.createCounter('mcpx_outbound_responses_cut_total', {
    description: 'Remote response bodies cut at a bound, by bound',
  });
  return (cut) => {
    try {
      cuts.add(1, { bound: cut.details.bound.name });
      const span = trace.getActiveSpan();
      if (span !== undefined) addResponseCutEvent(span, cut);
    } catch {
      // A metric must never break the response it reports on.
    }
  };
}
