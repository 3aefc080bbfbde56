import type { Msg, NatsConnection } from '@nats-io/transport-node';
import type { ApiClient } from './api-client.js';

/**
 * `api.act`, recording each response as JSON in `responses`: the text a leak check later searches
 * for secrets. An action that fails throws, and records nothing.
 */
export function recordingAct(
  responses: string[],
): (api: ApiClient, type: string, fields?: Record<string, unknown>) => Promise<any> {
  return async (api, type, fields = {}) => {
    const res = await api.act(type, fields);
    responses.push(JSON.stringify(res));
    return res;
  };
}

/**
 * Records the payload (as latin1 text) of every NATS message in a system's namespace
 * (`<natsPrefix>>`) and of every reply (`_INBOX.>`) into `payloads`, to prove no secret travels on
 * the bus. The subscriptions end with the connection.
 */
export function recordWire(nc: NatsConnection, natsPrefix: string, payloads: string[]): void {
  const record = (_err: unknown, msg: Msg): void => void payloads.push(Buffer.from(msg.data).toString('latin1'));
  nc.subscribe(`${natsPrefix}>`, { callback: record });
  nc.subscribe('_INBOX.>', { callback: record });
}
