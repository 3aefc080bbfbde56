import { connect, type Socket } from 'node:net';

/**
 * The slow-body attacker and its victims' processes: raw sockets that declare a body, send part
 * of it and stall (from any loopback address: 127.0.0.0/8 is all this host), and what each
 * received before the service closed it.
 */
export interface HeldConnection {
  socket: Socket;
  /** What the service answered so far (latin1). */
  received(): string;
  /** Resolves when the service (or the test) closed the socket. */
  closed: Promise<void>;
  isClosed(): boolean;
}

const CHUNK = Buffer.alloc(64 * 1024, 0x20);

/** Opens a socket from `from` (a loopback address) to the service's port and writes `head`. */
export function hold(url: string, head: string, from = '127.0.0.1'): Promise<HeldConnection> {
  const { port } = new URL(url);
  const socket = connect({ host: '127.0.0.1', port: Number(port), localAddress: from });
  let text = '';
  let closed = false;
  socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
  socket.on('error', () => undefined);
  const done = new Promise<void>((r) =>
    socket.once('close', () => {
      closed = true;
      r();
    }),
  );
  return new Promise((resolve, reject) => {
    socket.once('connect', () => {
      socket.write(head);
      resolve({ socket, received: () => text, closed: done, isClosed: () => closed });
    });
    socket.once('error', reject);
  });
}

/** Sends `bytes` of body in chunks, each after the last drained; stops early when the socket closes. */
export async function sendBody(c: HeldConnection, bytes: number): Promise<void> {
  let left = bytes;
  while (left > 0 && !c.isClosed() && !c.socket.destroyed) {
    const n = Math.min(left, CHUNK.length);
    left -= n;
    if (!c.socket.write(CHUNK.subarray(0, n)))
      await Promise.race([new Promise((r) => c.socket.once('drain', r)), c.closed]);
  }
}

/** A request head with a declared body length. */
export function postHead(path: string, length: number, headers: Record<string, string> = {}): string {
  const lines = Object.entries({
    host: '127.0.0.1',
    'content-type': 'application/json',
    'content-length': String(length),
    ...headers,
  }).map(([k, v]) => `${k}: ${v}`);
  return `POST ${path} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n`;
}

/** Waits for every connection to be closed, at most `ms`; the ones still open when it gives up. */
export async function closedWithin(conns: HeldConnection[], ms: number): Promise<number> {
  await Promise.race([Promise.all(conns.map((c) => c.closed)), new Promise((r) => setTimeout(r, ms))]);
  return conns.filter((c) => !c.isClosed()).length;
}

/** A counter of a service's `/metrics` (its internal port), summed over the series whose labels contain `labels`. */
export async function metric(internalUrl: string, name: string, labels = ''): Promise<number> {
  const text = await (await fetch(`${internalUrl}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n'))
    if (line.startsWith(name) && line.includes(labels)) sum += Number(line.split(' ').pop());
  return sum;
}
