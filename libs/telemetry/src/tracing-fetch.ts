import { context, propagation } from '@opentelemetry/api';

/**
 * Wraps a fetch so every request carries the active trace context (`traceparent`), so one trace
 * runs from an action or a call through the services to the remote MCP server.
 */
export function tracingFetch(base: typeof fetch = fetch): typeof fetch {
  return (input, init) => {
    const carrier: Record<string, string> = {};
    propagation.inject(context.active(), carrier);
    if (Object.keys(carrier).length === 0) return base(input, init);
    const headers = new Headers(init?.headers);
    for (const [k, v] of Object.entries(carrier)) headers.set(k, v);
    return base(input, { ...init, headers });
  };
}
