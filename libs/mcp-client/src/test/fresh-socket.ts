import { request as httpRequest } from 'node:http';
import type { McpHttpRequest } from '../index.js';

/**
 * The call path's request on a fresh socket each time (no keep-alive): a request never rides an
 * idle socket the server closed (or a killed process's), which no client can tell from one that
 * reached it.
 */
export const freshSocketRequest: McpHttpRequest = (url, opts) =>
  new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      { method: opts.method, headers: opts.headers, agent: false, ...(opts.signal ? { signal: opts.signal } : {}) },
      (res) => {
        resolve({ statusCode: res.statusCode ?? 0, headers: res.headers, body: res });
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
