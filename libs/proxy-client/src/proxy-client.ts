import { randomUUID } from 'node:crypto';
import { headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import {
  WireError,
  decodePayload,
  encodePayload,
  type ProxyCallReply,
  type ProxyCallRequest,
  type ProxyCancel,
  type RunEnded,
  type Subjects,
} from '@mcpx/contracts';
import type { ProxyResult } from '@mcpx/domain';
import { injectTraceHeaders } from '@mcpx/telemetry';

/** The proxy's own call timeout (seed 000: 120 s); the request waits a little longer. */
export const DEFAULT_CALL_TIMEOUT_MS = 120_000;
const REPLY_MARGIN_MS = 5_000;

export interface CallInput {
  account: string;
  agent: string;
  run: string;
  tool: string;
  arguments?: Record<string, unknown>;
  callId?: string;
  timeoutMs?: number;
  /** The approval of an earlier `approval_required` answer: re-send the same call with it. */
  approvalId?: string;
}

export interface CallOutcome {
  result: ProxyResult;
  /** The proxy instance that ran the call; later calls of the run go straight to it. */
  instance: string;
  callId: string;
}

function isNoResponders(err: unknown): boolean {
  const e = err as { code?: string; name?: string; message?: string };
  return e?.name === 'NoRespondersError' || e?.code === '503' || /no responders/i.test(e?.message ?? '');
}

/**
 * The agent runtime's side of the proxy: the first call of a run goes to the queue group, the
 * reply names the instance, and the run's later calls go to `mcp.proxy.<instance>.call` so that
 * they reuse that instance's pool. When the instance is gone, the call falls back to the group.
 */
export class ProxyClient {
  private readonly sticky = new Map<string, string>();

  constructor(
    private readonly nc: NatsConnection,
    private readonly subjects: Subjects,
  ) {}

  /** The instance a run is stuck to, if any (e.g. to persist it between CLI invocations). */
  instanceOf(run: string): string | undefined {
    return this.sticky.get(run);
  }

  stick(run: string, instance: string): void {
    this.sticky.set(run, instance);
  }

  /** Runs one call; throws a WireError with the proxy's typed code when it fails. */
  async call(input: CallInput): Promise<CallOutcome> {
    const callId = input.callId ?? randomUUID();
    const req: ProxyCallRequest = {
      account: input.account,
      agent: input.agent,
      run: input.run,
      tool: input.tool,
      arguments: input.arguments ?? {},
      callId,
      ...(input.timeoutMs !== undefined ? { timeoutMs: input.timeoutMs } : {}),
      ...(input.approvalId !== undefined ? { approvalId: input.approvalId } : {}),
    };
    const timeout = (input.timeoutMs ?? DEFAULT_CALL_TIMEOUT_MS) + REPLY_MARGIN_MS;
    const payload = encodePayload(req);
    const instance = this.sticky.get(input.run);
    let reply: ProxyCallReply;
    if (instance !== undefined) {
      try {
        reply = await this.send(this.subjects.proxyInstanceCall(instance), payload, timeout);
      } catch (err) {
        if (!isNoResponders(err)) throw err;
        this.sticky.delete(input.run);
        reply = await this.send(this.subjects.proxyCall, payload, timeout);
      }
    } else {
      reply = await this.send(this.subjects.proxyCall, payload, timeout);
    }
    this.sticky.set(input.run, reply.instance);
    if (!reply.ok) throw WireError.from(reply.error);
    return { result: reply.result, instance: reply.instance, callId };
  }

  async cancel(account: string, run: string, callId: string): Promise<void> {
    const msg: ProxyCancel = { account, run, callId };
    this.nc.publish(this.subjects.proxyCancel, encodePayload(msg));
    await this.nc.flush();
  }

  /** Ends a run: every proxy instance closes the run's pool. */
  async endRun(account: string, run: string): Promise<void> {
    const msg: RunEnded = { account, run };
    this.nc.publish(this.subjects.runEnded(account, run), encodePayload(msg));
    this.sticky.delete(run);
    await this.nc.flush();
  }

  private async send(subject: string, payload: Uint8Array, timeout: number): Promise<ProxyCallReply> {
    try {
      const msg = await this.nc.request(subject, payload, { timeout, headers: injectTraceHeaders(natsHeaders()) });
      return decodePayload<ProxyCallReply>(msg.data);
    } catch (err) {
      if (isNoResponders(err)) throw err;
      const e = err as { name?: string; message?: string };
      if (e.name === 'TimeoutError' || /timeout/i.test(e.message ?? '')) {
        throw new WireError('timeout', 'the proxy did not answer in time');
      }
      throw err;
    }
  }
}
