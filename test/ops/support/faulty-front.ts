/**
 * A TCP relay on loopback in front of a real server, that a fault test turns bad: `pass` relays
 * both ways; `blackhole` accepts every connection and reads it, and never answers nor forwards
 * (an upstream that accepts and never answers; established relays go silent too); `cut()`
 * destroys every open connection (a crash, as the client sees it).
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

export type FrontMode = 'pass' | 'blackhole';

export interface FaultyFront {
  port: number;
  /** `http://127.0.0.1:PORT` + path. */
  url(path?: string): string;
  mode: FrontMode;
  /** Connections accepted so far. */
  accepted(): number;
  cut(): void;
  close(): Promise<void>;
}

export async function startFaultyFront(target: { port: number; host?: string }): Promise<FaultyFront> {
  const open = new Set<Socket>();
  let accepted = 0;
  const state = { mode: 'pass' as FrontMode };
  const server: Server = createServer((client) => {
    accepted++;
    open.add(client);
    client.on('close', () => open.delete(client));
    client.on('error', () => undefined);
    if (state.mode === 'blackhole') {
      client.resume(); // read and drop
      return;
    }
    const upstream = connect({ port: target.port, host: target.host ?? '127.0.0.1' });
    open.add(upstream);
    upstream.on('close', () => {
      open.delete(upstream);
      client.destroy();
    });
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    client.on('data', (d) => {
      if (state.mode === 'pass') upstream.write(d);
    });
    upstream.on('data', (d) => {
      if (state.mode === 'pass') client.write(d);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    url: (path = '/mcp') => `http://127.0.0.1:${port}${path}`,
    get mode() {
      return state.mode;
    },
    set mode(m: FrontMode) {
      state.mode = m;
    },
    accepted: () => accepted,
    cut: () => {
      for (const s of open) s.destroy();
    },
    close: async () => {
      for (const s of open) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
