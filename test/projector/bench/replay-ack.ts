import { encodePayload } from '@mcpx/contracts';
import type { Bus } from '@mcpx/bus';

/**
 * The time from publishing `payload` on `subject` (MCP_EVENTS) to the projector's ack of that
 * message, seen on the wire: the ack a consumer sends is a message on
 * `$JS.ACK.<stream>.<durable>.<delivered>.<stream seq>.…`, which this connection subscribes to
 * before publishing. No polling of JetStream's API: the bench's own requests are not timed (under
 * load each poll of stream and consumer info costs as much as the replay it watches).
 */
export async function publishToAckMs(
  bus: Bus,
  subject: string,
  payload: unknown,
  durable = 'projector',
  timeoutMs = 60_000,
): Promise<number> {
  const prefix = `$JS.ACK.${bus.subjects.mcpEventsStream}.${durable}.`;
  const ackedAt = new Map<number, number>();
  let wanted: number | undefined;
  let settle: ((at: number) => void) | undefined;
  const acked = new Promise<number>((resolve) => (settle = resolve));
  const sub = bus.nc.subscribe(`${prefix}>`, {
    callback: (err, msg) => {
      if (err) return;
      const body = msg.string();
      // +WPI (working), -NAK and +TERM are not the ack.
      if (body !== '' && !body.startsWith('+ACK')) return;
      const seq = Number(msg.subject.slice(prefix.length).split('.')[1]);
      ackedAt.set(seq, performance.now());
      if (seq === wanted) settle?.(ackedAt.get(seq)!);
    },
  });
  await bus.nc.flush();
  let timer: NodeJS.Timeout | undefined;
  try {
    const t0 = performance.now();
    const puback = await bus.js.publish(subject, encodePayload(payload), { headers: bus.traceHeaders() });
    wanted = puback.seq;
    const early = ackedAt.get(wanted);
    if (early !== undefined) return early - t0;
    const timeout = new Promise<never>(
      (_, reject) =>
        (timer = setTimeout(() => reject(new Error(`no ack of stream seq ${wanted} in ${timeoutMs} ms`)), timeoutMs)),
    );
    return (await Promise.race([acked, timeout])) - t0;
  } finally {
    clearTimeout(timer);
    sub.unsubscribe();
  }
}
