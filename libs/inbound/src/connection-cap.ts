import type { Server } from 'node:http';
import type { Socket } from 'node:net';

const CAPPED_BODY = JSON.stringify({
  error: { code: 'unavailable', message: 'too many open connections from this address; retry' },
});
/** What a capped socket is told before it is closed: a whole HTTP answer, since no request was read. */
const CAPPED_ANSWER = [
  'HTTP/1.1 503 Service Unavailable',
  'content-type: application/json',
  'retry-after: 5',
  'connection: close',
  `content-length: ${Buffer.byteLength(CAPPED_BODY)}`,
  '',
  CAPPED_BODY,
].join('\r\n');

/** An address without an IPv4-mapped prefix (`::ffff:127.0.0.1` is 127.0.0.1). */
export function plainAddress(address: string | undefined): string {
  const a = address ?? 'unknown';
  return a.toLowerCase().startsWith('::ffff:') && a.includes('.') ? a.slice(7) : a;
}

/**
 * Counts the open sockets of each peer address (the socket's, never a header's) from the
 * `connection` event to the socket's `close`; a socket past `perAddress` is answered 503 and
 * closed before anything of it is read. `exempt` peers (trusted proxies, which carry many clients
 * on their sockets) are not counted. Returns the sockets refused, which the request handler must
 * not serve (a request already on its way is dropped).
 */
export function capConnections(
  server: Server,
  opts: { perAddress: number; exempt: (address: string) => boolean; onRefused: (address: string) => void },
): WeakSet<Socket> {
  const refused = new WeakSet<Socket>();
  if (opts.perAddress <= 0) return refused;
  const open = new Map<string, number>();
  // First, before the HTTP parser reads anything of the socket.
  server.prependListener('connection', (socket: Socket) => {
    const address = plainAddress(socket.remoteAddress);
    if (opts.exempt(address)) return;
    const held = open.get(address) ?? 0;
    if (held >= opts.perAddress) {
      refused.add(socket);
      opts.onRefused(address);
      socket.end(CAPPED_ANSWER);
      socket.setTimeout(1_000, () => socket.destroy());
      return;
    }
    open.set(address, held + 1);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left <= 0) open.delete(address);
      else open.set(address, left);
    });
  });
  return refused;
}
