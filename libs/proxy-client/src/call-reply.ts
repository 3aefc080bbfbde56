import type { NatsConnection } from '@nats-io/transport-node';
import { ErrorCodes, WireError, decodeStrict, proxyResultValue, type ProxyCallReply } from '@mcpx/contracts';
import type { ProxyResult } from '@mcpx/domain';

/** One subject of a call's notifications (progress, log messages), each decoded and told to `on` while the call runs. */
export function listenCall<T>(
  nc: NatsConnection,
  subject: string,
  decode: (bytes: Uint8Array) => T,
  on: (value: T) => void,
): { unsubscribe(): void } {
  return nc.subscribe(subject, {
    callback: (err, msg) => {
      if (err !== null) return;
      let value: T;
      try {
        value = decode(msg.data);
      } catch {
        return;
      }
      try {
        on(value);
      } catch {
        // The caller's listener: its fault must not end the subscription.
      }
    },
  });
}

/**
 * A reply of the proxy's call endpoint, strictly decoded and checked (`{ok, instance, result |
 * error}`), its result by `proxyResultValue` of `@mcpx/contracts`. A malformed one is the
 * responder's fault: `maybe_executed` (the call may have run, so it is never retried) naming the
 * field (`reply`, with the decoder's rule; `reply.result.durationMs`, …), never a crash or a
 * half-read reply. An error of any shape is rebuilt as a typed one (`WireError.from`).
 */
export function decodeCallReply(bytes: Uint8Array): ProxyCallReply {
  const malformed = (field: string, rule?: unknown): WireError =>
    new WireError(
      ErrorCodes.maybeExecuted,
      'malformed reply from the proxy (the call may have run); it was not retried',
      { field, ...(rule !== undefined ? { rule } : {}) },
    );
  let r: Record<string, unknown>;
  try {
    const v = decodeStrict(bytes, 'reply');
    if (v === null || typeof v !== 'object' || Array.isArray(v) || ArrayBuffer.isView(v)) throw malformed('reply');
    r = v as Record<string, unknown>;
  } catch (e) {
    throw malformed('reply', e instanceof WireError ? e.details.rule : undefined);
  }
  if (typeof r.instance !== 'string' || r.instance === '') throw malformed('reply.instance');
  if (r.ok === true) {
    let result: ProxyResult;
    try {
      result = proxyResultValue(r.result, 'reply.result');
    } catch (e) {
      throw malformed(e instanceof WireError && typeof e.details.field === 'string' ? e.details.field : 'reply.result');
    }
    return { ok: true, instance: r.instance, result };
  }
  if (r.ok === false) return { ok: false, instance: r.instance, error: WireError.from(r.error).toJSON() };
  throw malformed('reply.ok');
}
