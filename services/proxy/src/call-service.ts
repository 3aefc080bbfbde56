import type { MsgHdrs, NatsConnection } from '@nats-io/transport-node';
import { startMicroService, type ServiceMsg } from '@mcpx/bus';
import {
  QueueGroups,
  decodeCallRequest,
  encodePayload,
  malformedMessageFields,
  toWireError,
  type ProxyCallReply,
  type Subjects,
} from '@mcpx/contracts';
import type { Logger } from '@mcpx/log';
import { extractTraceContext } from '@mcpx/telemetry';
import { toWire, type CallHandler } from './call-handler.js';

/** The micro-service name of the proxy when NATS_PREFIX is empty. */
export const PROXY_SERVICE_NAME = 'mcpx-proxy';

/**
 * The proxy's NATS service name in a namespace: `mcpx-proxy`, or `<ns>-mcpx-proxy` under the
 * prefix `<ns>.` (`$SRV.*` subjects are not prefixed, so the name keeps deployments that share a
 * NATS server apart). Discover instances with `$SRV.PING|INFO|STATS.<name>`; each instance's INFO
 * carries `metadata.instance`, the token of its sticky subject `mcp.proxy.<instance>.call`.
 */
export function proxyServiceName(prefix: string): string {
  return prefix === '' ? PROXY_SERVICE_NAME : `${prefix.slice(0, -1)}-${PROXY_SERVICE_NAME}`;
}

export interface ProxyStats {
  instance: string;
  runs: number;
  connections: number;
  inflight: number;
  calls: number;
  results: Record<string, number>;
  /** Broken response streams resumed with `Last-Event-ID`, and those that could not be. */
  resumptions: { resumed: number; failed: number };
  invalidations: number;
  /** Open tasks this instance created and still holds a record of (docs/tasks.md#the-broker). */
  liveTasks?: number;
}

export interface CallServiceDeps {
  nc: NatsConnection;
  subjects: Subjects;
  instance: string;
  handler: CallHandler;
  stats: () => ProxyStats;
  log: Logger;
}

export interface CallService {
  name: string;
  stop(): Promise<void>;
}

/**
 * `mcp.proxy.call` (queue group `proxy`) and `mcp.proxy.<instance>.call` as endpoints of a NATS
 * micro-service, so `$SRV.PING/INFO/STATS` find every instance with its stats. Every request gets
 * a reply, `{ok, instance, result | error}`; a malformed one a typed `invalid_input`.
 */
export async function startCallService(deps: CallServiceDeps): Promise<CallService> {
  const { handler, instance, log } = deps;
  const name = proxyServiceName(deps.subjects.prefix);
  const reply = replySender(instance, log, () => handler.heldCount);

  const onCall = (err: Error | null, msg: ServiceMsg): void => {
    if (err) return;
    // Nothing may throw out of here: the services library calls this from the connection's
    // reader, and a throw would close the proxy's connection.
    try {
      let req;
      try {
        req = decodeCallRequest(msg.data);
      } catch (e) {
        const wire = toWire(e);
        handler.count(wire.code);
        log.warn('refused a malformed call request', malformedMessageFields(msg, e));
        reply(msg, { ok: false, instance, error: wire.toJSON() });
        return;
      }
      // Answered as soon as the outcome is known; the call's span, metrics and log row follow.
      handler
        .handle(req, extractTraceContext(msg.headers as MsgHdrs | undefined), (result, error) =>
          reply(
            msg,
            error === undefined
              ? { ok: true, instance, result: result! }
              : { ok: false, instance, error: error.toJSON() },
          ),
        )
        .catch(() => undefined);
    } catch (e) {
      log.error('a call request could not be handled', { subject: msg.subject, err: e as Error });
    }
  };

  const service = await startMicroService(deps.nc, {
    name,
    version: '0.1.0',
    description: 'Executes MCP tool calls over per-run pooled connections',
    metadata: { instance },
    queue: QueueGroups.proxy,
    stats: deps.stats,
    endpoints: [
      { name: 'call', subject: deps.subjects.proxyCall, handler: onCall, metadata: { sticky: 'false' } },
      {
        name: 'instance-call',
        subject: deps.subjects.proxyInstanceCall(instance),
        handler: onCall,
        metadata: { sticky: 'true' },
      },
    ],
    log,
  });
  return { name, stop: () => service.stop() };
}

/**
 * How the call service answers. While other calls are being worked on, replies are sent together
 * once the event loop's I/O callbacks of this turn have run (a setImmediate): the answers of calls
 * that finished in the same turn then leave in one socket write. A write to the NATS server is the
 * proxy's dearest syscall (it wakes the server), and under load many answers arrive per turn. The
 * answer of the only call in progress (`held()` is 0) leaves at once.
 */
function replySender(
  instance: string,
  log: Logger,
  held: () => number,
): (msg: ServiceMsg, body: ProxyCallReply) => void {
  const respond = (msg: ServiceMsg, body: ProxyCallReply): void => {
    try {
      msg.respond(encodePayload(body));
    } catch (err) {
      // A reply too big for NATS' max payload: say so instead of leaving the caller to time out.
      log.warn('reply failed', { err: err as Error });
      const error = toWireError(err).toJSON();
      msg.respond(
        encodePayload({
          ok: false,
          instance,
          error: { ...error, message: 'the result could not be sent' },
        } satisfies ProxyCallReply),
      );
    }
  };

  let queued: Array<{ msg: ServiceMsg; body: ProxyCallReply }> = [];
  const send = (msg: ServiceMsg, body: ProxyCallReply): void => {
    try {
      respond(msg, body);
    } catch (err) {
      // Even the short error reply failed (the connection closed): the caller's request times out.
      log.warn('reply failed', { err: err as Error });
    }
  };
  const flush = (): void => {
    const batch = queued;
    queued = [];
    for (const r of batch) send(r.msg, r.body);
  };
  return (msg: ServiceMsg, body: ProxyCallReply): void => {
    if (queued.length === 0 && held() === 0) return send(msg, body);
    if (queued.push({ msg, body }) === 1) setImmediate(flush);
  };
}
