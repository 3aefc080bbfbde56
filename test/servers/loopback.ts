import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Server as TlsServer } from 'node:https';

export interface Listening {
  port: number;
  /** The sockets open now (a test may count them). */
  sockets: ReadonlySet<Socket>;
  /** Stops listening and ends every open socket; once, however often it is called. */
  close: () => Promise<void>;
}

/**
 * Listens on `port` (default: any free one) of `host` (default 127.0.0.1), tracking the server's
 * sockets (`secureConnection` for https) so that closing never waits on a keep-alive client.
 */
export async function listenOnLoopback(
  server: Server | TlsServer,
  opts: { host?: string; port?: number; tls?: boolean } = {},
): Promise<Listening> {
  const sockets = new Set<Socket>();
  server.on(opts.tls === true ? 'secureConnection' : 'connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the server has no port');
  let closing: Promise<void> | undefined;
  const close = async (): Promise<void> => {
    closing ??= new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
      for (const s of sockets) s.destroy();
    });
    await closing;
  };
  return { port: address.port, sockets, close };
}
