import { createServer } from 'node:net';

/**
 * A TCP port that was free on `host` a moment ago. The port is released before this resolves, so
 * another process may take it first; use it for children that need a port up front (listen on 0
 * when you can bind yourself).
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  return await new Promise<number>((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        server.close();
        reject(new Error('could not read the bound port'));
        return;
      }
      const { port } = address;
      server.close(() => resolve(port));
    });
  });
}
