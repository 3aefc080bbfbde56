import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Redis } from 'ioredis';
import { SpanKind, type Meter, type Tracer } from '@opentelemetry/api';
import { ErrorCodes, WireError, toWireError } from '@mcpx/contracts';
import type { InboundGuard } from '@mcpx/inbound';
import type { Logger } from '@mcpx/log';
import { clientTraceOrigin, withSpan } from '@mcpx/telemetry';
import { dispatchAction, isKnownAction, type ActionDeps } from '../actions/index.js';
import type { Admission } from './admission.js';
import { dependencyUnavailable } from './dependency-errors.js';
import { authenticate, parseEnvelope } from './envelope-auth.js';
import { MAX_BODY_BYTES, decodeBody, isCbor, retryAfterHeader, send } from './http-codec.js';

export interface ActionRouteDeps {
  actions: ActionDeps;
  redis: Redis;
  redisPrefix: string;
  log: Logger;
  tracer: Tracer;
  meter: Meter;
  inbound: InboundGuard;
  admission: Admission;
}

/**
 * `POST /v1/actions`: a signed action, admitted (the address's rate, the bounded read, the
 * signature, the signer's rate), dispatched, answered in the format it came in; each a span
 * (`action <type>`) and counted in `mcpx_actions_total{action, code}`.
 */
export function actionRoute(deps: ActionRouteDeps): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  const requests = deps.meter.createCounter('mcpx_actions_total', { description: 'Actions by type and result code' });
  const duration = deps.meter.createHistogram('mcpx_action_duration_ms', { unit: 'ms', description: 'Action time' });
  const refused = deps.meter.createCounter('mcpx_action_bodies_refused_total', {
    description: 'Action bodies the decoder refused, by format and rule',
  });
  const actionDeps: ActionDeps = { ...deps.actions, quotas: deps.admission.quotas };

  /** The body decoded, or undefined when the guard answered it (too large, too slow, over the budget) or the client went away. */
  const readAction = async (req: IncomingMessage, res: ServerResponse, cbor: boolean): Promise<unknown> => {
    const raw = await deps.inbound.read(req, res, MAX_BODY_BYTES);
    if (raw === undefined) return undefined;
    try {
      return decodeBody(raw, cbor);
    } catch (err) {
      // Which rule refused a body, by a fixed set of labels (the rules), never the bytes.
      const rule = err instanceof WireError && typeof err.details.rule === 'string' ? err.details.rule : 'not_json';
      refused.add(1, { format: cbor ? 'cbor' : 'json', rule });
      throw err;
    }
  };

  const answerError = (res: ServerResponse, err: unknown, type: string, cbor: boolean): void => {
    // A store's outage is said at once and typed (`unavailable`, the store named); any other
    // fault that is not a wire error stays `internal`.
    const down = dependencyUnavailable(err);
    const wire = down ?? toWireError(err);
    if (down !== undefined)
      deps.log.warn('action refused: a store is unavailable', { action: type, dependency: down.details.dependency });
    else if (!(err instanceof WireError)) deps.log.error('action failed', { action: type, err: err as Error });
    requests.add(1, { action: type, code: wire.code });
    // A body over the limit is 413 (Payload Too Large), still an invalid_input naming `body`.
    const status = wire.code === ErrorCodes.invalidInput && wire.details.status === 413 ? 413 : wire.httpStatus;
    if (status === 413) res.setHeader('connection', 'close');
    for (const [k, v] of Object.entries(retryAfterHeader(wire))) res.setHeader(k, v);
    send(res, status, { error: wire.toJSON() }, cbor);
  };

  return async (req, res) => {
    const cbor = isCbor(req);
    const started = performance.now();
    let type = 'unknown';
    try {
      // The credential is inside the signed body: the address's rate first, then the bounded read
      // (a refusal is answered unread and the connection closed after it).
      await deps.admission.address(req);
      const body = await readAction(req, res, cbor);
      if (body === undefined) return;
      const envelope = parseEnvelope(body);
      // Metric labels and span names take known action types only: unauthenticated input must
      // not mint new series.
      type = isKnownAction(String(envelope.action.type)) ? String(envelope.action.type) : 'unknown';
      const result = await withSpan(
        deps.tracer,
        `action ${type}`,
        { 'mcpx.action': type, 'mcp.account': envelope.account },
        async () => {
          const caller = await authenticate(envelope, {
            redis: deps.redis,
            redisPrefix: deps.redisPrefix,
            accounts: deps.actions.accounts,
          });
          await deps.admission.signer(caller.signer);
          return dispatchAction(actionDeps, caller, envelope.action);
        },
        // A new trace linked to the client's traceparent, never its child (SECURITY.md).
        { kind: SpanKind.SERVER, ...clientTraceOrigin(req.headers) },
      );
      requests.add(1, { action: type, code: 'ok' });
      send(res, 200, result, cbor);
    } catch (err) {
      answerError(res, err, type, cbor);
    } finally {
      duration.record(performance.now() - started, { action: type });
    }
  };
}
